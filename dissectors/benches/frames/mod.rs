//! The frames the dissect bench times and `examples/dissect_count.rs` counts: one builder,
//! so the two measure the same bytes.
#![allow(dead_code)]

use core::net::Ipv4Addr;

use rocescope_dissectors::builder::{ExtReprs, L2, NetworkRepr, Policy, RoceFrame};
use rocescope_dissectors::ethernet::{self, Address, EtherType};
use rocescope_dissectors::ib::aeth::{self, Syndrome};
use rocescope_dissectors::ib::reth;
use rocescope_dissectors::ipv4::{self, IpProtocol};
use rocescope_dissectors::{BthRepr, Opcode, Psn, Qpn};

pub fn frame(opcode: Opcode, exts: ExtReprs, payload_len: usize) -> Vec<u8> {
    let repr = RoceFrame {
        l2: L2::untagged(ethernet::Repr {
            dst_addr: Address([2, 0, 0, 0, 0, 2]),
            src_addr: Address([2, 0, 0, 0, 0, 1]),
            ethertype: EtherType::IPV4,
        }),
        network: NetworkRepr::Ipv4 {
            ip: ipv4::Repr {
                src_addr: Ipv4Addr::new(10, 0, 0, 1),
                dst_addr: Ipv4Addr::new(10, 0, 0, 2),
                next_header: IpProtocol::UDP,
                payload_len: 0,
                hop_limit: 64,
                dscp: 26,
                ecn: 2,
                ident: 1,
                dont_frag: true,
            },
            src_port: 0xC001,
            dst_port: 4791,
        },
        bth: BthRepr {
            opcode,
            solicited_event: false,
            mig_req: true,
            pad_count: 0,
            tver: 0,
            pkey: 0xFFFF,
            fecn: false,
            becn: false,
            dest_qp: Qpn::new_masked(0x11),
            ack_req: false,
            psn: Psn::new_masked(1000),
        },
        exts,
        payload_len,
    };
    let mut buf = vec![0u8; repr.buffer_len()];
    let n = repr
        .emit(&mut buf, &Policy::default(), |p| p.fill(0x5A))
        .expect("build");
    buf.truncate(n);
    buf
}

/// `inner` (an Ethernet frame) as an ERSPAN III mirror session sends it to a collector.
pub fn erspan3(inner: &[u8]) -> Vec<u8> {
    use rocescope_dissectors::encap::{erspan, gre};
    let mut tunnel = [0u8; 8 + erspan::TYPE3_LEN];
    let g = gre::emit(&mut tunnel, gre::proto::ERSPAN_22EB, None, Some(7));
    erspan::Repr {
        type3: true,
        vlan: 0,
        cos: 0,
        truncated: false,
        session: 42,
        index_or_timestamp: 123_456,
        hw: 1,
        egress: false,
    }
    .emit(&mut tunnel[g..]);
    let mut f = vec![2, 0, 0, 0, 0xFE, 2, 2, 0, 0, 0, 0xFE, 1, 0x08, 0x00];
    let total = u16::try_from(20 + tunnel.len() + inner.len()).expect("fits");
    f.extend_from_slice(&[0x45, 0, 0, 0, 0, 1, 0x40, 0, 64, 47, 0, 0]);
    f[16..18].copy_from_slice(&total.to_be_bytes());
    f.extend_from_slice(&[192, 0, 2, 1, 192, 0, 2, 2]);
    f.extend_from_slice(&tunnel);
    f.extend_from_slice(inner);
    f
}

/// A 1 KiB RC RDMA WRITE FIRST with its RETH.
pub fn write_1k() -> Vec<u8> {
    frame(
        Opcode::RC_RDMA_WRITE_FIRST,
        ExtReprs {
            reth: Some(reth::Repr {
                va: 0x7f00_0000_1000,
                rkey: 0x1234,
                dma_len: 65536,
            }),
            ..ExtReprs::default()
        },
        1024,
    )
}

/// An RC ACKNOWLEDGE (AETH ACK, MSN 7).
pub fn ack() -> Vec<u8> {
    frame(
        Opcode::RC_ACKNOWLEDGE,
        ExtReprs {
            aeth: Some(aeth::Repr {
                syndrome: Syndrome(0x1F),
                msn: 7,
            }),
            ..ExtReprs::default()
        },
        0,
    )
}
