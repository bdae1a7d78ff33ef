//! proptest strategies for every `Repr` (like etherparse's `test_gens`),
//! shared with the root crate's tests through the `proptest` feature.

use proptest::prelude::*;

use crate::ib::bth;
use crate::ib::opcode::Opcode;
use crate::ib::psn::{Psn, Qpn};

pub fn psn() -> impl Strategy<Value = Psn> {
    (0u32..=0x00FF_FFFF).prop_map(Psn::new_masked)
}

pub fn qpn() -> impl Strategy<Value = Qpn> {
    (0u32..=0x00FF_FFFF).prop_map(Qpn::new_masked)
}

prop_compose! {
    pub fn bth()(
        opcode in any::<u8>(),
        solicited_event in any::<bool>(),
        mig_req in any::<bool>(),
        pad_count in 0u8..4,
        tver in 0u8..16,
        pkey in any::<u16>(),
        fecn in any::<bool>(),
        becn in any::<bool>(),
        dest_qp in qpn(),
        ack_req in any::<bool>(),
        psn in psn(),
    ) -> bth::Repr {
        bth::Repr { opcode: Opcode(opcode), solicited_event, mig_req, pad_count, tver, pkey, fecn, becn, dest_qp, ack_req, psn }
    }
}

// --- BTH extension headers (ib/{reth,aeth,atomic_eth,atomic_ack_eth,immdt,ieth,deth,rdeth,xrceth,feth,cnp}.rs)

prop_compose! {
    pub fn reth()(va in any::<u64>(), rkey in any::<u32>(), dma_len in any::<u32>()) -> crate::ib::reth::Repr {
        crate::ib::reth::Repr { va, rkey, dma_len }
    }
}

prop_compose! {
    pub fn aeth()(syndrome in any::<u8>(), msn in 0u32..=0x00FF_FFFF) -> crate::ib::aeth::Repr {
        crate::ib::aeth::Repr { syndrome: crate::ib::aeth::Syndrome(syndrome), msn }
    }
}

prop_compose! {
    pub fn atomic_eth()(
        va in any::<u64>(),
        rkey in any::<u32>(),
        swap_add in any::<u64>(),
        compare in any::<u64>(),
    ) -> crate::ib::atomic_eth::Repr {
        crate::ib::atomic_eth::Repr { va, rkey, swap_add, compare }
    }
}

prop_compose! {
    pub fn atomic_ack_eth()(orig_remote_data in any::<u64>()) -> crate::ib::atomic_ack_eth::Repr {
        crate::ib::atomic_ack_eth::Repr { orig_remote_data }
    }
}

prop_compose! {
    pub fn immdt()(imm_data in any::<u32>()) -> crate::ib::immdt::Repr {
        crate::ib::immdt::Repr { imm_data }
    }
}

prop_compose! {
    pub fn ieth()(rkey in any::<u32>()) -> crate::ib::ieth::Repr {
        crate::ib::ieth::Repr { rkey }
    }
}

prop_compose! {
    pub fn deth()(qkey in any::<u32>(), src_qp in qpn()) -> crate::ib::deth::Repr {
        crate::ib::deth::Repr { qkey, src_qp }
    }
}

prop_compose! {
    pub fn rdeth()(ee_context in 0u32..=0x00FF_FFFF) -> crate::ib::rdeth::Repr {
        crate::ib::rdeth::Repr { ee_context }
    }
}

prop_compose! {
    pub fn xrceth()(xrc_srqn in 0u32..=0x00FF_FFFF) -> crate::ib::xrceth::Repr {
        crate::ib::xrceth::Repr { xrc_srqn }
    }
}

prop_compose! {
    pub fn feth()(placement_type in 0u8..16, selectivity_level in 0u8..4) -> crate::ib::feth::Repr {
        crate::ib::feth::Repr { placement_type, selectivity_level }
    }
}

pub fn cnp() -> impl Strategy<Value = crate::ib::cnp::Repr> {
    Just(crate::ib::cnp::Repr)
}

// --- ethernet, vlan, mac_control, grh ---

pub fn mac_address() -> impl Strategy<Value = crate::ethernet::Address> {
    any::<[u8; 6]>().prop_map(crate::ethernet::Address)
}

prop_compose! {
    pub fn ethernet()(
        dst_addr in mac_address(),
        src_addr in mac_address(),
        ethertype in any::<u16>(),
    ) -> crate::ethernet::Repr {
        crate::ethernet::Repr { dst_addr, src_addr, ethertype: crate::ethernet::EtherType(ethertype) }
    }
}

prop_compose! {
    pub fn vlan()(
        pcp in 0u8..8,
        dei in any::<bool>(),
        vid in 0u16..=0x0FFF,
        ethertype in any::<u16>(),
    ) -> crate::vlan::Repr {
        crate::vlan::Repr {
            pcp,
            dei,
            vid: crate::vlan::VlanId::new_masked(vid),
            ethertype: crate::ethernet::EtherType(ethertype),
        }
    }
}

pub fn mac_control() -> impl Strategy<Value = crate::mac_control::Repr> {
    use crate::mac_control::{MacControlOpcode, Repr};
    prop_oneof![
        any::<u16>().prop_map(|quanta| Repr::Pause { quanta }),
        (0u16..=0x00FF, any::<[u16; 8]>())
            .prop_map(|(enable, quanta)| Repr::Pfc { enable, quanta }),
        any::<u16>()
            .prop_filter("PAUSE and PFC have their own variants", |op| {
                *op != MacControlOpcode::PAUSE.0 && *op != MacControlOpcode::PFC.0
            })
            .prop_map(|op| Repr::Other {
                opcode: MacControlOpcode(op)
            }),
    ]
}

prop_compose! {
    pub fn grh()(
        tclass in any::<u8>(),
        flow_label in 0u32..=0x000F_FFFF,
        payload_len in 0u16..=2048,
        next_header in prop_oneof![Just(crate::grh::NEXT_HEADER_IBA), any::<u8>()],
        hop_limit in any::<u8>(),
        sgid in any::<[u8; 16]>(),
        dgid in any::<[u8; 16]>(),
    ) -> crate::grh::Repr {
        crate::grh::Repr {
            tclass,
            flow_label,
            payload_len,
            next_header,
            hop_limit,
            sgid: core::net::Ipv6Addr::from(sgid),
            dgid: core::net::Ipv6Addr::from(dgid),
        }
    }
}

prop_compose! {
    pub fn ipv4()(
        src_addr in any::<u32>(),
        dst_addr in any::<u32>(),
        next_header in any::<u8>(),
        payload_len in 0usize..=crate::ipv4::Repr::MAX_PAYLOAD_LEN,
        hop_limit in any::<u8>(),
        dscp in 0u8..64,
        ecn in 0u8..4,
        ident in any::<u16>(),
        dont_frag in any::<bool>(),
    ) -> crate::ipv4::Repr {
        crate::ipv4::Repr {
            src_addr: core::net::Ipv4Addr::from_bits(src_addr),
            dst_addr: core::net::Ipv4Addr::from_bits(dst_addr),
            next_header: crate::ipv4::IpProtocol(next_header),
            payload_len,
            hop_limit,
            dscp,
            ecn,
            ident,
            dont_frag,
        }
    }
}

prop_compose! {
    pub fn ipv6()(
        src_addr in any::<u128>(),
        dst_addr in any::<u128>(),
        next_header in any::<u8>(),
        payload_len in 0usize..=crate::ipv6::Repr::MAX_PAYLOAD_LEN,
        hop_limit in any::<u8>(),
        traffic_class in any::<u8>(),
        flow_label in 0u32..=0x000F_FFFF,
    ) -> crate::ipv6::Repr {
        crate::ipv6::Repr {
            src_addr: core::net::Ipv6Addr::from_bits(src_addr),
            dst_addr: core::net::Ipv6Addr::from_bits(dst_addr),
            next_header: crate::ipv4::IpProtocol(next_header),
            payload_len,
            hop_limit,
            traffic_class,
            flow_label,
        }
    }
}

prop_compose! {
    pub fn udp()(
        src_port in any::<u16>(),
        dst_port in prop_oneof![Just(crate::udp::ROCEV2_PORT), any::<u16>()],
        payload_len in 0usize..=crate::udp::Repr::MAX_PAYLOAD_LEN,
    ) -> crate::udp::Repr {
        crate::udp::Repr { src_port, dst_port, payload_len }
    }
}

// ---- cm.rs: CM MADs (REQ/MRA/REJ/REP/RTU/DREQ/DREP + an unknown attribute) ----

prop_compose! {
    pub fn mad_header()(
        base_version in any::<u8>(),
        mgmt_class in any::<u8>(),
        class_version in any::<u8>(),
        response in any::<bool>(),
        method in 0u8..0x80,
        status in any::<u16>(),
        class_specific in any::<u16>(),
        transaction_id in any::<u64>(),
        attribute_id in any::<u16>(),
        attribute_modifier in any::<u32>(),
    ) -> crate::cm::Repr {
        crate::cm::Repr {
            base_version, mgmt_class, class_version, response, method, status,
            class_specific, transaction_id, attribute_id, attribute_modifier,
        }
    }
}

prop_compose! {
    fn cm_req()(
        ids in (any::<u64>(), any::<u32>(), any::<u64>()),
        qp in (qpn(), 0u32..=0x00FF_FFFF, psn(), any::<u16>()),
        bits in (0u8..16, 0u8..4, 0u8..8, 0u8..8, any::<u8>(), any::<u8>()),
        path in (any::<u16>(), any::<u16>(), any::<[u8; 16]>(), any::<[u8; 16]>()),
    ) -> crate::cm::CmMessage {
        let (transaction_id, local_comm_id, service_id) = ids;
        let (local_qpn, local_eecn, starting_psn, pkey) = qp;
        let (code, tst, retry, rnr, rr, depth) = bits;
        let (llid, rlid, lgid, rgid) = path;
        crate::cm::CmMessage {
            local_comm_id,
            service_id: Some(service_id),
            local_qpn: Some(local_qpn),
            local_eecn: Some(local_eecn),
            starting_psn: Some(starting_psn),
            pkey: Some(pkey),
            path_mtu_code: Some(code),
            path_mtu: crate::cm::mtu_from_code(code),
            transport_service_type: Some(tst),
            retry_count: Some(retry),
            rnr_retry_count: Some(rnr),
            responder_resources: Some(rr),
            initiator_depth: Some(depth),
            primary_local_lid: Some(llid),
            primary_remote_lid: Some(rlid),
            primary_local_gid: Some(core::net::Ipv6Addr::from(lgid)),
            primary_remote_gid: Some(core::net::Ipv6Addr::from(rgid)),
            ..crate::cm::CmMessage::new(crate::cm::CmAttribute::CONNECT_REQUEST, transaction_id)
        }
    }
}

prop_compose! {
    fn cm_rep()(
        ids in (any::<u64>(), any::<u32>(), any::<u32>()),
        qp in (qpn(), 0u32..=0x00FF_FFFF, psn()),
        bits in (any::<u8>(), any::<u8>(), 0u8..8),
    ) -> crate::cm::CmMessage {
        let (transaction_id, local_comm_id, remote_comm_id) = ids;
        let (local_qpn, local_eecn, starting_psn) = qp;
        let (rr, depth, rnr) = bits;
        crate::cm::CmMessage {
            local_comm_id,
            remote_comm_id,
            local_qpn: Some(local_qpn),
            local_eecn: Some(local_eecn),
            starting_psn: Some(starting_psn),
            responder_resources: Some(rr),
            initiator_depth: Some(depth),
            rnr_retry_count: Some(rnr),
            ..crate::cm::CmMessage::new(crate::cm::CmAttribute::CONNECT_REPLY, transaction_id)
        }
    }
}

prop_compose! {
    /// MRA, REJ, RTU, DREQ, DREP (comm IDs plus the REJ / DREQ fields).
    fn cm_short()(
        attribute in 0x0011u16..=0x0016,
        transaction_id in any::<u64>(),
        local_comm_id in any::<u32>(),
        remote_comm_id in any::<u32>(),
        remote_qpn in qpn(),
        rejected_message in 0u8..4,
        reject_reason in any::<u16>(),
    ) -> crate::cm::CmMessage {
        use crate::cm::{CmAttribute, CmMessage};
        // 0x0013 is REP, which has its own strategy: read it as MRA here
        let attribute = if attribute == 0x0013 { CmAttribute::MSG_RCPT_ACK } else { CmAttribute(attribute) };
        let rej = attribute == CmAttribute::CONNECT_REJECT;
        CmMessage {
            local_comm_id,
            remote_comm_id,
            remote_qpn: (attribute == CmAttribute::DISCONNECT_REQUEST).then_some(remote_qpn),
            rejected_message: rej.then_some(rejected_message),
            reject_reason: rej.then_some(reject_reason),
            ..CmMessage::new(attribute, transaction_id)
        }
    }
}

prop_compose! {
    /// Attributes outside REQ..DREP: only the header is kept.
    fn cm_other()(
        attribute in any::<u16>().prop_filter("not REQ..DREP", |a| !(0x0010..=0x0016).contains(a)),
        transaction_id in any::<u64>(),
    ) -> crate::cm::CmMessage {
        crate::cm::CmMessage::new(crate::cm::CmAttribute(attribute), transaction_id)
    }
}

/// A canonical `CmMessage`: exactly the fields its attribute carries.
pub fn cm_message() -> impl Strategy<Value = crate::cm::CmMessage> {
    prop_oneof![cm_req(), cm_rep(), cm_short(), cm_other()]
}

// --- tcp, tcp_bth ---

prop_compose! {
    pub fn tcp_bth_core()(
        flags in any::<u8>(),
        opcode in any::<u8>(),
        msn in any::<u16>(),
        mbo_lo in 0u32..=0x00FF_FFFF,
        seg in any::<u8>(),
        icrc in any::<u32>(),
    ) -> crate::tcp_bth::Core {
        crate::tcp_bth::Core { flags, opcode: Opcode(opcode), msn, mbo_lo, seg, icrc }
    }
}

/// Any `tcp_bth` option (v1 never with TSP, which v1 forbids).
pub fn tcp_bth() -> impl Strategy<Value = crate::tcp_bth::Repr> {
    use crate::tcp_bth::{Core, Enf, Repr, V1, flags::TSP};
    let kind = prop_oneof![Just(253u8), Just(254u8)];
    prop_oneof![
        (kind.clone(), any::<u16>()).prop_map(|(kind, exid)| Repr::Syn { kind, exid }),
        (
            kind.clone(),
            any::<u16>(),
            tcp_bth_core(),
            any::<u32>(),
            any::<u32>()
        )
            .prop_map(|(kind, exid, core, ts, ts_echo)| Repr::Enf(Enf {
                kind,
                exid,
                core,
                ts,
                ts_echo
            })),
        (
            kind,
            any::<u16>(),
            tcp_bth_core(),
            any::<(u32, u32, u8, u8, u16)>()
        )
            .prop_map(|(kind, exid, core, (imm, mlen, mbo_hi, rsvd8, rsvd16))| {
                let core = Core {
                    flags: core.flags & !TSP,
                    ..core
                };
                Repr::V1(V1 {
                    kind,
                    exid,
                    core,
                    imm,
                    mlen,
                    mbo_hi,
                    rsvd8,
                    rsvd16,
                })
            }),
    ]
}

prop_compose! {
    /// Options that fit the 40-byte area; `tcp_bth` with the default ExID.
    pub fn tcp_options()(
        mss in proptest::option::of(any::<u16>()),
        window_scale in proptest::option::of(any::<u8>()),
        sack_permitted in any::<bool>(),
        timestamps in proptest::option::of(any::<(u32, u32)>()),
        sack in proptest::collection::vec(any::<(u32, u32)>(), 0..=3),
        bth in proptest::option::of(tcp_bth()),
    ) -> crate::tcp::Options {
        let mut blocks = [None; crate::tcp::MAX_SACK_BLOCKS];
        for (slot, b) in blocks.iter_mut().zip(sack) {
            *slot = Some(b);
        }
        let tcp_bth = bth.map(|b| match b {
            crate::tcp_bth::Repr::Syn { kind, .. } => crate::tcp_bth::Repr::Syn { kind, exid: crate::tcp_bth::TCP_BTH_EXID_DEFAULT },
            crate::tcp_bth::Repr::Enf(e) => crate::tcp_bth::Repr::Enf(crate::tcp_bth::Enf { exid: crate::tcp_bth::TCP_BTH_EXID_DEFAULT, ..e }),
            crate::tcp_bth::Repr::V1(v) => crate::tcp_bth::Repr::V1(crate::tcp_bth::V1 { exid: crate::tcp_bth::TCP_BTH_EXID_DEFAULT, ..v }),
        });
        let mut o = crate::tcp::Options { mss, window_scale, sack_permitted, timestamps, sack: blocks, tcp_bth };
        // drop what does not fit, least important first
        while o.len() > crate::tcp::MAX_OPTIONS_LEN {
            if let Some(slot) = o.sack.iter_mut().rev().find(|s| s.is_some()) {
                *slot = None;
            } else if o.mss.is_some() {
                o.mss = None;
            } else {
                o.window_scale = None;
            }
        }
        o
    }
}

prop_compose! {
    pub fn tcp()(
        ports in any::<(u16, u16)>(),
        seq_number in any::<u32>(),
        ack_number in any::<u32>(),
        flags in 0u16..0x200,
        window_len in any::<u16>(),
        urgent_at in any::<u16>(),
        options in tcp_options(),
        payload_len in 0usize..64,
    ) -> crate::tcp::Repr {
        crate::tcp::Repr {
            src_port: ports.0, dst_port: ports.1, seq_number, ack_number,
            flags: crate::tcp::Flags(flags), window_len, urgent_at, options, payload_len,
        }
    }
}
