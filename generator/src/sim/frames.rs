//! Frame building: a captured packet in flight becomes RoCE bytes in the caller's buffer (its
//! headers from the scenario's hosts and connection, payload, ICRC), PFC frames and the
//! `tcp_bth` model's segments likewise.

// Indexing cannot panic here: frames are built into a buffer of at least MAX_FRAME_LEN (checked in
// `next_frame`), at offsets below it; hosts and connections are indexed as validated by the
// scenario.
#![allow(clippy::indexing_slicing)]

use super::*;

impl Generator<'_> {
    /// `roce_frame(p).buffer_len()` without building the frame.
    pub(super) fn frame_len(&self, p: &Pkt) -> usize {
        let conn = &self.sc.connections[ix(p.conn)];
        let src = match p.dir {
            Dir::Req => conn.requester,
            Dir::Resp => conn.responder,
        };
        let h = &self.sc.hosts[src];
        if conn.dc {
            // DC's 8 bytes, an RDETH and a DETH after the BTH (an ACK: the 8 bytes and AETH)
            let code = dc_opcode(p.opcode);
            let headers = code.dc_info(false).map_or(bth::HEADER_LEN, |i| {
                bth::HEADER_LEN + usize::from(i.ext_len)
            });
            let payload = p.payload as usize;
            let l2 = ethernet::HEADER_LEN
                + if h.vlan.is_some() {
                    vlan::HEADER_LEN
                } else {
                    0
                };
            let net = if h.ip.is_ipv4() { 20 + 8 } else { 40 + 8 };
            return (l2 + net + headers + payload + (payload.wrapping_neg() & 3) + 4).max(60);
        }
        if self.sc.link_kind == LinkKind::Infiniband {
            // LRH, a GRH between GIDs, the transport, ICRC and VCRC (no ERF header: that is
            // the capture's, not the wire's)
            let headers = p
                .opcode
                .info()
                .and_then(|i| i.header_bytes())
                .unwrap_or(bth::HEADER_LEN);
            let grh = if h.ip.is_ipv6() { 40 } else { 0 };
            let payload = p.payload as usize;
            return 8 + grh + headers + payload + (payload.wrapping_neg() & 3) + 4 + 2;
        }
        let l2 = ethernet::HEADER_LEN
            + if h.vlan.is_some() {
                vlan::HEADER_LEN
            } else {
                0
            };
        let net = if h.ip.is_ipv4() { 20 + 8 } else { 40 + 8 };
        let headers = p
            .opcode
            .info()
            .and_then(|i| i.header_bytes())
            .unwrap_or(bth::HEADER_LEN);
        let payload = p.payload as usize;
        (l2 + net + headers + payload + (payload.wrapping_neg() & 3) + 4).max(60)
    }

    pub(super) fn roce_frame(&self, p: &Pkt) -> RoceFrame {
        let conn = &self.sc.connections[ix(p.conn)];
        let (src, dst, dest_qp) = match p.dir {
            Dir::Req => (conn.requester, conn.responder, conn.responder_qpn),
            Dir::Resp => (conn.responder, conn.requester, conn.requester_qpn),
        };
        let (sh, dh) = (&self.sc.hosts[src], &self.sc.hosts[dst]);
        let cnp = p.opcode == Opcode::CNP;
        let mut l2 = L2::untagged(ethernet::Repr {
            dst_addr: ethernet::Address(dh.mac),
            src_addr: ethernet::Address(sh.mac),
            ethertype: EtherType::IPV4,
        });
        if let Some((vid, pcp)) = sh.vlan {
            l2.vlans[0] = Some(VlanTag {
                tpid: EtherType::VLAN,
                tag: vlan::Repr {
                    pcp: if cnp { 6 } else { pcp },
                    dei: false,
                    vid: VlanId::new_masked(vid),
                    ethertype: EtherType::IPV4,
                },
            });
        }
        let (dscp, ecn) = if cnp {
            (48, 2)
        } else if p.ce {
            (sh.dscp, 3)
        } else {
            (sh.dscp, sh.ecn)
        };
        let src_port = if cnp { 0 } else { conn.udp_sport };
        let network = match (sh.ip, dh.ip) {
            _ if self.sc.link_kind == LinkKind::Infiniband => NetworkRepr::Ib {
                lrh: lrh::Repr {
                    vl: 0,
                    lver: 0,
                    sl: sh.sl,
                    lnh: lrh::NextHeader::IbaLocal,
                    dlid: dh.lid,
                    pkt_len: 0,
                    slid: sh.lid,
                },
                // hosts with GIDs route globally (a GRH), the others locally (LIDs only)
                grh: match (sh.ip, dh.ip) {
                    (IpAddr::V6(s), IpAddr::V6(d)) => Some(grh::Repr {
                        tclass: 0,
                        flow_label: 0,
                        payload_len: 0,
                        next_header: grh::NEXT_HEADER_IBA,
                        hop_limit: 64,
                        sgid: s,
                        dgid: d,
                    }),
                    _ => None,
                },
            },
            (IpAddr::V4(s), IpAddr::V4(d)) => NetworkRepr::Ipv4 {
                ip: ipv4::Repr {
                    src_addr: s,
                    dst_addr: d,
                    next_header: ipv4::IpProtocol::UDP,
                    payload_len: 0,
                    hop_limit: 64,
                    dscp,
                    ecn,
                    ident: 0,
                    dont_frag: true,
                },
                src_port,
                dst_port: 4791,
            },
            (s, d) => NetworkRepr::Ipv6 {
                ip: ipv6::Repr {
                    src_addr: to_v6(s),
                    dst_addr: to_v6(d),
                    next_header: ipv4::IpProtocol::UDP,
                    payload_len: 0,
                    hop_limit: 64,
                    traffic_class: (dscp << 2) | ecn,
                    flow_label: u32::from(src_port) & 0xF_FFFF,
                },
                src_port,
                dst_port: 4791,
            },
        };
        let opcode = if conn.dc && !cnp {
            dc_opcode(p.opcode)
        } else {
            p.opcode
        };
        let bth = bth::Repr {
            opcode,
            solicited_event: false,
            mig_req: !cnp,
            pad_count: 0,
            tver: 0,
            pkey: if cnp { 0xFFFF } else { conn.pkey },
            fecn: false,
            becn: cnp,
            dest_qp: Qpn::new_masked(dest_qp),
            ack_req: p.ack_req,
            psn: p.psn,
        };
        let exts = ExtReprs {
            deth: Some(deth::Repr {
                qkey: conn.qkey,
                src_qp: Qpn::new_masked(conn.requester_qpn),
            }),
            reth: Some(reth::Repr {
                va: p.va,
                rkey: 0x1234u32.wrapping_add(p.conn),
                dma_len: p.dma_len,
            }),
            atomic_eth: Some(atomic_eth::Repr {
                va: p.va,
                rkey: 0x1234u32.wrapping_add(p.conn),
                swap_add: 1,
                compare: 0,
            }),
            aeth: Some(aeth::Repr {
                syndrome: p.syndrome,
                msn: p.msn,
            }),
            atomic_ack_eth: Some(atomic_ack_eth::Repr {
                orig_remote_data: u64::from(p.psn.value()),
            }),
            immdt: Some(immdt::Repr {
                imm_data: p.psn.value(),
            }),
            ieth: Some(ieth::Repr {
                rkey: 0x1234u32.wrapping_add(p.conn),
            }),
            // DC: byte 0 bit 0 set requester → responder, the sender's QPN, a per-session
            // constant (the layout the one real DC capture shows, capture-formats.md §3.5)
            dc: conn.dc.then(|| {
                let (owner, qpn) = match p.dir {
                    Dir::Req => (0x11, conn.requester_qpn),
                    Dir::Resp => (0x10, conn.responder_qpn),
                };
                let q = qpn.to_be_bytes();
                [owner, q[1], q[2], q[3], 0, 0x71, 0x50, 0x04]
            }),
            rdeth: conn.dc.then_some(rdeth::Repr {
                ee_context: 0x0061_e97d & 0x00FF_FFFF,
            }),
            ..ExtReprs::default()
        };
        RoceFrame {
            l2,
            network,
            bth,
            exts,
            payload_len: p.payload as usize,
        }
    }

    pub(super) fn build(
        &mut self,
        t: u64,
        c: &Captured,
        buf: &mut [u8],
    ) -> Result<FrameOut, GenError> {
        let wire_ns = self.sc.start_ns.saturating_add(t);
        let time_ns = self.tap_time(wire_ns);
        match *c {
            Captured::Roce(p) => {
                let frame = self.roce_frame(&p);
                let garbage = self.sc.capture_icrc == CaptureIcrc::Garbage;
                let policy = Policy {
                    icrc: if p.corrupt {
                        IcrcPolicy::Corrupt(0xDEAD_BEEF)
                    } else if garbage {
                        // what an offload sniffer's copy holds: never the wire's ICRC
                        IcrcPolicy::Corrupt(0x5A5A_0000 | (p.psn.value() & 0xFFFF) | 1)
                    } else {
                        IcrcPolicy::Correct
                    },
                    ..Policy::default()
                };
                let fill = (p.psn.value() & 0xFF) as u8;
                let ib = self.sc.link_kind == LinkKind::Infiniband;
                // a native packet goes in an ERF record, as ibdump writes it; a mirrored one
                // is built after room for the mirror session's headers
                let at = if ib {
                    erf::HEADER_LEN
                } else if self.sc.encapsulation.is_some() {
                    WRAP_ROOM
                } else {
                    0
                };
                let Some(body) = buf.get_mut(at..) else {
                    return Err(GenError::Build(BuildError::BufferTooSmall {
                        need: at,
                        have: 0,
                    }));
                };
                let len = at + frame.emit_filled(body, &policy, fill, &mut self.emit_cache)?;
                if ib {
                    let wire = u16::try_from(len - at).unwrap_or(u16::MAX);
                    erf::Repr {
                        timestamp: 0,
                        record_type: erf::types::INFINIBAND,
                        flags: 4,
                        rlen: u16::try_from(len).unwrap_or(u16::MAX),
                        lctr: 0,
                        wlen: wire,
                    }
                    .emit(&mut erf::Header::new_unchecked(&mut buf[..erf::HEADER_LEN]));
                    erf::Header::new_unchecked(&mut buf[..erf::HEADER_LEN]).set_time_ns(time_ns);
                }
                let snap = match (p.snap, self.sc.snaplen) {
                    (0, 0) => len,
                    (0, s) | (s, 0) => s as usize,
                    (a, b) => a.min(b) as usize,
                };
                // (the cut of a mirrored frame is the inner frame's: the copy the switch made)
                let wrapped = at == WRAP_ROOM && !ib;
                let cut = if wrapped {
                    at + (len - at).min(snap)
                } else {
                    len.min(snap)
                };
                let info = p.opcode.info();
                let frame_number = self.frames;
                if let Some(log) = &mut self.tap_log {
                    log.push(TapRecord {
                        serial: p.serial,
                        flow: ix(p.conn) * 2 + usize::from(p.dir == Dir::Resp),
                        opcode: p.opcode.0,
                        psn: p.psn.value(),
                        frame: frame_number,
                        time_ns: wire_ns,
                        ce: p.ce,
                        icrc_bad: p.corrupt || garbage,
                        truncated: cut < len,
                    });
                }
                let conn = &self.sc.connections[ix(p.conn)];
                self.truth.roce(&Seen {
                    time: time_ns,
                    flow: ix(p.conn) * 2 + usize::from(p.dir == Dir::Resp),
                    operation: info.map_or(Operation::Cnp, |i| i.operation),
                    position: info.map_or(Position::Only, |i| i.position),
                    psn: p.psn,
                    consumed: p.consumed,
                    dma_len: p.dma_len,
                    syndrome: p.syndrome,
                    msn: p.msn,
                    ce: p.ce,
                    icrc_bad: p.corrupt || garbage,
                    truncated: cut < len,
                    is_ud: conn.transport == TransportKind::Ud,
                    is_dc: conn.dc,
                    is_uc: conn.transport == TransportKind::Uc,
                });
                if let Some(enc) = self.sc.encapsulation.filter(|_| wrapped) {
                    if enc.is_erspan() {
                        // the switch cut its copy and says so in the T bit; the outer
                        // headers and the collector's record describe the copy
                        let n = wrap(buf, enc, at, cut - at, cut < len, time_ns, true);
                        return Ok(FrameOut {
                            time_ns,
                            len: n,
                            orig_len: n,
                        });
                    }
                    // a tunnel carries the whole frame; the collector's snaplen cuts the
                    // record, outer headers included
                    let n = wrap(buf, enc, at, len - at, false, time_ns, true);
                    let outer = n - (len - at);
                    return Ok(FrameOut {
                        time_ns,
                        len: outer + (cut - at),
                        orig_len: n,
                    });
                }
                Ok(FrameOut {
                    time_ns,
                    len: cut,
                    orig_len: len,
                })
            }
            Captured::Pfc { spec, quanta } => {
                let p = self.sc.pfc[usize::from(spec)];
                let mac = self.sc.hosts[p.host].mac;
                let mut q = [0u16; 8];
                q[usize::from(p.priority & 7)] = quanta;
                let frame = MacControlFrame {
                    l2: L2::untagged(ethernet::Repr {
                        dst_addr: PAUSE_DST,
                        src_addr: ethernet::Address(mac),
                        ethertype: EtherType::MAC_CONTROL,
                    }),
                    body: mac_control::Repr::Pfc {
                        enable: 1 << (p.priority & 7),
                        quanta: q,
                    },
                };
                self.truth.pfc(time_ns, mac, p.priority, quanta);
                // mirrored like the RoCE frames, but MPLS carries IP only
                if let Some(enc) = self.sc.encapsulation.filter(|e| *e != Encapsulation::Mpls) {
                    let len = frame.emit(&mut buf[WRAP_ROOM..])?;
                    let n = wrap(buf, enc, WRAP_ROOM, len, false, time_ns, false);
                    return Ok(FrameOut {
                        time_ns,
                        len: n,
                        orig_len: n,
                    });
                }
                let len = frame.emit(buf)?;
                Ok(FrameOut {
                    time_ns,
                    len,
                    orig_len: len,
                })
            }
        }
    }

    pub(super) fn build_tcp(&mut self, buf: &mut [u8]) -> Result<FrameOut, GenError> {
        let Some(r) = self.tcp.build_next(self.sc, buf) else {
            return Err(GenError::Build(BuildError::InvalidRepr(
                "no tcp_bth segment",
            )));
        };
        let (t, len, has_bth) = r?;
        let time_ns = self.tap_time(self.sc.start_ns.saturating_add(t));
        self.truth.tcp(time_ns, has_bth);
        Ok(FrameOut {
            time_ns,
            len,
            orig_len: len,
        })
    }
}

/// Room before a mirrored frame for the mirror session's headers (Ethernet, IPv4 and the
/// longest tunnel header, Geneve's 24 bytes with UDP).
pub(super) const WRAP_ROOM: usize = 64;

/// The collector's and the mirroring switch's addresses on the outer headers.
const COLLECTOR_MAC: [u8; 6] = [0x02, 0, 0, 0, 0xFE, 0x02];
const MIRROR_MAC: [u8; 6] = [0x02, 0, 0, 0, 0xFE, 0x01];
const MIRROR_IP: std::net::Ipv4Addr = std::net::Ipv4Addr::new(192, 0, 2, 1);
const COLLECTOR_IP: std::net::Ipv4Addr = std::net::Ipv4Addr::new(192, 0, 2, 2);

/// Wrap the frame of `inner_len` bytes at `buf[inner_at..]` as a mirror session would and
/// move the result to the start of `buf`; returns its length. `cut`: the switch truncated
/// the copy (ERSPAN's T bit). `ip`: the frame carries IP (MPLS keeps only the IP packet).
#[allow(clippy::too_many_arguments)]
pub(super) fn wrap(
    buf: &mut [u8],
    enc: Encapsulation,
    inner_at: usize,
    inner_len: usize,
    cut: bool,
    time_ns: u64,
    ip: bool,
) -> usize {
    use rocescope_dissectors::checksum::ChecksumMode;
    use rocescope_dissectors::encap::{erspan, gre, mpls, vxlan};
    let eth = |buf: &mut [u8], at: usize, ethertype: EtherType| {
        ethernet::Repr {
            dst_addr: ethernet::Address(COLLECTOR_MAC),
            src_addr: ethernet::Address(MIRROR_MAC),
            ethertype,
        }
        .emit(&mut ethernet::Frame::new_unchecked(
            &mut buf[at..at + ethernet::HEADER_LEN],
        ));
    };
    let (start, end) = if enc == Encapsulation::Mpls {
        // the inner Ethernet header (and its VLAN tags) is dropped: labels, then the IP packet
        let mut ip_at = inner_at + ethernet::HEADER_LEN;
        while matches!(
            u16::from_be_bytes([buf[ip_at - 2], buf[ip_at - 1]]),
            0x8100 | 0x88A8
        ) {
            ip_at += 4;
        }
        let start = ip_at - 8 - ethernet::HEADER_LEN;
        eth(buf, start, EtherType::MPLS);
        mpls::emit(&mut buf[start + ethernet::HEADER_LEN..ip_at], &[16, 1000]);
        let _ = ip;
        (start, inner_at + inner_len)
    } else {
        let tunnel = match enc {
            Encapsulation::Erspan2 => 8 + erspan::TYPE2_LEN,
            Encapsulation::Erspan3 => 8 + erspan::TYPE3_LEN,
            Encapsulation::Gre => 8,
            Encapsulation::Vxlan => 8 + vxlan::HEADER_LEN,
            Encapsulation::Geneve => 8 + 16,
            Encapsulation::Mpls => 0,
        };
        let start = inner_at - tunnel - 20 - ethernet::HEADER_LEN;
        let ip_at = start + ethernet::HEADER_LEN;
        let t_at = ip_at + 20;
        eth(buf, start, EtherType::IPV4);
        let udp = matches!(enc, Encapsulation::Vxlan | Encapsulation::Geneve);
        let l4 = tunnel + inner_len;
        ipv4::Repr {
            src_addr: MIRROR_IP,
            dst_addr: COLLECTOR_IP,
            next_header: if udp {
                ipv4::IpProtocol::UDP
            } else {
                ipv4::IpProtocol::GRE
            },
            payload_len: l4,
            hop_limit: 64,
            dscp: 0,
            ecn: 0,
            ident: (time_ns & 0xFFFF) as u16,
            dont_frag: true,
        }
        .emit(
            &mut ipv4::Packet::new_unchecked(&mut buf[ip_at..ip_at + 20]),
            ChecksumMode::Both,
        );
        let seq = (time_ns / 1000) as u32;
        // 100 ns units, as ERSPAN III's granularity 1 says
        let stamp = (time_ns / 100) as u32;
        match enc {
            Encapsulation::Erspan2 | Encapsulation::Erspan3 => {
                let p = if enc == Encapsulation::Erspan2 {
                    gre::proto::ERSPAN_88BE
                } else {
                    gre::proto::ERSPAN_22EB
                };
                let g = gre::emit(&mut buf[t_at..], p, None, Some(seq));
                erspan::Repr {
                    type3: enc == Encapsulation::Erspan3,
                    vlan: 0,
                    cos: 0,
                    truncated: cut,
                    session: 42,
                    index_or_timestamp: if enc == Encapsulation::Erspan3 {
                        stamp
                    } else {
                        7
                    },
                    hw: 1,
                    egress: false,
                }
                .emit(&mut buf[t_at + g..]);
            }
            Encapsulation::Gre => {
                gre::emit(&mut buf[t_at..], gre::proto::TEB, Some(0x0000_2A2A), None);
            }
            Encapsulation::Vxlan | Encapsulation::Geneve => {
                let port = if enc == Encapsulation::Vxlan {
                    vxlan::VXLAN_PORT
                } else {
                    vxlan::GENEVE_PORT
                };
                let u = &mut buf[t_at..t_at + 8];
                u[0..2].copy_from_slice(&(49_152 | (seq & 0x3FFF) as u16).to_be_bytes());
                u[2..4].copy_from_slice(&port.to_be_bytes());
                u[4..6].copy_from_slice(&u16::try_from(l4).unwrap_or(u16::MAX).to_be_bytes());
                u[6..8].fill(0);
                if enc == Encapsulation::Vxlan {
                    vxlan::emit_vxlan(&mut buf[t_at + 8..], 5001);
                } else {
                    vxlan::emit_geneve(&mut buf[t_at + 8..], 5001);
                }
            }
            Encapsulation::Mpls => {}
        }
        (start, inner_at + inner_len)
    };
    buf.copy_within(start..end, 0);
    end - start
}

/// An RC opcode's DC counterpart on the RD range (same low five bits).
pub(super) fn dc_opcode(op: Opcode) -> Opcode {
    Opcode(0x40 | (op.0 & 0x1F))
}

pub(super) fn to_v6(a: IpAddr) -> std::net::Ipv6Addr {
    match a {
        IpAddr::V6(a) => a,
        IpAddr::V4(a) => a.to_ipv6_mapped(),
    }
}
