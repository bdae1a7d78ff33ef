//! The kernel filter of a live capture: a classic BPF program that keeps only what rocescope
//! analyzes (interfaces.md §11), so that the rest of an interface's traffic never costs a copy.
//!
//! Kept, on an Ethernet interface, with no VLAN tag, one or two (802.1Q, 802.1ad, 0x9100):
//! - MAC Control (`EtherType` 0x8808: PFC and PAUSE) and RoCEv1 (0x8915);
//! - IPv4 and IPv6 UDP to port 4791 or a `--roce-port` (RoCEv2); first IPv4 fragments only,
//!   IPv6 without extension headers before UDP;
//! - TCP whose options hold the tcp_bth option (kind 254, ExID 0xEFAB) starting at any of the 17
//!   places a 24-byte option fits in the 40-byte option space.
//!
//! An accepted packet is cut to the snapshot length by the program's return value (as libpcap
//! does). The program uses only loads, `and`, conditional jumps and returns, forward only, so
//! that the kernel's checker and any cBPF interpreter take it.

/// One classic BPF instruction (`struct sock_filter`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Insn {
    pub code: u16,
    pub jt: u8,
    pub jf: u8,
    pub k: u32,
}

const LD_H_ABS: u16 = 0x28;
const LD_B_ABS: u16 = 0x30;
const LD_H_IND: u16 = 0x48;
const LDX_B_MSH: u16 = 0xb1;
const AND_K: u16 = 0x54;
const JA: u16 = 0x05;
const JEQ_K: u16 = 0x15;
const JSET_K: u16 = 0x45;
const RET_K: u16 = 0x06;

const ETH_MAC_CONTROL: u32 = 0x8808;
const ETH_ROCEV1: u32 = 0x8915;
const ETH_IPV4: u32 = 0x0800;
const ETH_IPV6: u32 = 0x86dd;
const ETH_MPLS: [u32; 2] = [0x8847, 0x8848];
const IPPROTO_GRE: u32 = 47;
/// UDP ports of tunnels that carry Ethernet frames: VXLAN and Geneve.
const TUNNEL_PORTS: [u16; 2] = [4789, 6081];
const VLAN_TPIDS: [u32; 3] = [0x8100, 0x88a8, 0x9100];
const IPPROTO_TCP: u32 = 6;
const IPPROTO_UDP: u32 = 17;
const ROCEV2_PORT: u16 = 4791;
const TCP_BTH_KIND: u32 = 254;
const TCP_BTH_EXID: u32 = 0xEFAB;
/// The last option offset at which kind, length and ExID still fit in 40 bytes of options.
const TCP_BTH_LAST_AT: u32 = 36;

/// The program for `roce_ports` (besides 4791), cutting packets to `snaplen` bytes.
///
/// # Errors
/// So many ports that a jump no longer reaches its target (cBPF jumps span 255 instructions).
pub fn default_program(roce_ports: &[u16], snaplen: u32) -> Result<Vec<Insn>, String> {
    let mut ports = vec![ROCEV2_PORT];
    for &p in roce_ports.iter().chain(&TUNNEL_PORTS) {
        if !ports.contains(&p) {
            ports.push(p);
        }
    }
    let mut a = Asm::default();
    // Untagged, one tag, two tags: the EtherType and the network header at fixed offsets each.
    let one_tag = a.label();
    let two_tags = a.label();
    let untagged = a.label();
    let to_one_tag = a.label();
    a.stmt(LD_H_ABS, 12);
    for tpid in VLAN_TPIDS {
        a.jump(JEQ_K, tpid, Some(to_one_tag), None);
    }
    a.ja(untagged);
    a.place(to_one_tag);
    a.ja(one_tag);
    a.place(untagged);
    network(&mut a, 14, &ports, snaplen);
    a.place(one_tag);
    let (to_two_tags, one_tag_only) = (a.label(), a.label());
    a.stmt(LD_H_ABS, 16);
    a.jump(JEQ_K, VLAN_TPIDS[0], Some(to_two_tags), Some(one_tag_only));
    a.place(to_two_tags);
    a.ja(two_tags);
    a.place(one_tag_only);
    network(&mut a, 18, &ports, snaplen);
    a.place(two_tags);
    a.stmt(LD_H_ABS, 20);
    network(&mut a, 22, &ports, snaplen);
    a.finish().map_err(|()| {
        format!(
            "{} --roce-port values are too many for the kernel filter; give fewer, or --all",
            roce_ports.len()
        )
    })
}

/// Every packet, cut to `snaplen` bytes (`--all`).
#[must_use]
pub fn all_program(snaplen: u32) -> Vec<Insn> {
    vec![Insn {
        code: RET_K,
        jt: 0,
        jf: 0,
        k: snaplen,
    }]
}

/// The tests after the EtherType (in A) of a frame whose network header starts at `l3`.
fn network(a: &mut Asm, l3: u32, ports: &[u16], snaplen: u32) {
    let accept = a.label();
    let (v4, to_v4) = (a.label(), a.label());
    let (v6, to_v6) = (a.label(), a.label());
    a.jump(JEQ_K, ETH_MAC_CONTROL, Some(accept), None);
    a.jump(JEQ_K, ETH_ROCEV1, Some(accept), None);
    for mpls in ETH_MPLS {
        a.jump(JEQ_K, mpls, Some(accept), None);
    }
    a.jump(JEQ_K, ETH_IPV4, Some(to_v4), None);
    a.jump(JEQ_K, ETH_IPV6, Some(to_v6), None);
    a.ret(0);
    a.place(accept);
    a.ret(snaplen);
    // the IPv6 tests lie further than a conditional jump reaches
    a.place(to_v4);
    a.ja(v4);
    a.place(to_v6);
    a.ja(v6);

    // IPv4: X = the header length, from IHL.
    let v4_udp = a.label();
    let v4_tcp = a.label();
    a.place(v4);
    a.stmt(LD_B_ABS, l3 + 9);
    a.jump(JEQ_K, IPPROTO_UDP, Some(v4_udp), None);
    a.jump(JEQ_K, IPPROTO_TCP, Some(v4_tcp), None);
    gre(a, snaplen);
    a.place(v4_udp);
    first_fragment(a, l3);
    a.stmt(LDX_B_MSH, l3);
    udp_ports(a, LD_H_IND, l3 + 2, ports, snaplen);
    a.place(v4_tcp);
    first_fragment(a, l3);
    a.stmt(LDX_B_MSH, l3);
    tcp_bth_option(a, LD_H_IND, l3 + 20, snaplen);

    // IPv6: a fixed 40-byte header, the transport right after it.
    let v6_udp = a.label();
    let v6_tcp = a.label();
    a.place(v6);
    a.stmt(LD_B_ABS, l3 + 6);
    a.jump(JEQ_K, IPPROTO_UDP, Some(v6_udp), None);
    a.jump(JEQ_K, IPPROTO_TCP, Some(v6_tcp), None);
    gre(a, snaplen);
    a.place(v6_udp);
    udp_ports(a, LD_H_ABS, l3 + 40 + 2, ports, snaplen);
    a.place(v6_tcp);
    tcp_bth_option(a, LD_H_ABS, l3 + 40 + 20, snaplen);
}

/// Accepts GRE (protocol number in A), drops the rest.
fn gre(a: &mut Asm, snaplen: u32) {
    let accept = a.label();
    a.jump(JEQ_K, IPPROTO_GRE, Some(accept), None);
    a.ret(0);
    a.place(accept);
    a.ret(snaplen);
}

/// Drops IPv4 fragments after the first (they carry no transport header).
fn first_fragment(a: &mut Asm, l3: u32) {
    let whole = a.label();
    a.stmt(LD_H_ABS, l3 + 6);
    a.jump(JSET_K, 0x1fff, None, Some(whole));
    a.ret(0);
    a.place(whole);
}

/// Accepts when the UDP destination port (a half-word at `at`) is one of `ports`.
fn udp_ports(a: &mut Asm, load: u16, at: u32, ports: &[u16], snaplen: u32) {
    let accept = a.label();
    a.stmt(load, at);
    for &p in ports {
        a.jump(JEQ_K, u32::from(p), Some(accept), None);
    }
    a.ret(0);
    a.place(accept);
    a.ret(snaplen);
}

/// Accepts when a tcp_bth option starts at one of the places it fits; the TCP options start at
/// `options` (relative to X for an indirect `load`).
fn tcp_bth_option(a: &mut Asm, load: u16, options: u32, snaplen: u32) {
    let accept = a.label();
    for at in 0..=TCP_BTH_LAST_AT {
        let next = a.label();
        // kind and length, then the ExID
        a.stmt(load, options + at);
        a.stmt(AND_K, 0xff00);
        a.jump(JEQ_K, TCP_BTH_KIND << 8, None, Some(next));
        a.stmt(load, options + at + 2);
        a.jump(JEQ_K, TCP_BTH_EXID, Some(accept), None);
        a.place(next);
    }
    a.ret(0);
    a.place(accept);
    a.ret(snaplen);
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Label(usize);

#[derive(Debug, Clone, Copy)]
enum Op {
    Stmt(u16, u32),
    /// A conditional jump; `None` falls through.
    Jump(u16, u32, Option<Label>, Option<Label>),
    Ja(Label),
}

/// A tiny assembler: instructions with forward labels, resolved at the end.
#[derive(Debug, Default)]
struct Asm {
    ops: Vec<Op>,
    /// Where each label was placed (an instruction index).
    at: Vec<Option<usize>>,
}

impl Asm {
    fn label(&mut self) -> Label {
        self.at.push(None);
        Label(self.at.len() - 1)
    }

    fn place(&mut self, l: Label) {
        if let Some(slot) = self.at.get_mut(l.0) {
            *slot = Some(self.ops.len());
        }
    }

    fn stmt(&mut self, code: u16, k: u32) {
        self.ops.push(Op::Stmt(code, k));
    }

    fn ret(&mut self, k: u32) {
        self.stmt(RET_K, k);
    }

    fn jump(&mut self, code: u16, k: u32, t: Option<Label>, f: Option<Label>) {
        self.ops.push(Op::Jump(code, k, t, f));
    }

    fn ja(&mut self, l: Label) {
        self.ops.push(Op::Ja(l));
    }

    /// The program; `Err` when a label was never placed, lies behind its jump, or is out of a
    /// conditional jump's reach.
    fn finish(self) -> Result<Vec<Insn>, ()> {
        let offset = |pc: usize, l: Option<Label>| -> Result<usize, ()> {
            match l {
                None => Ok(0),
                Some(l) => {
                    let target = self.at.get(l.0).copied().flatten().ok_or(())?;
                    target.checked_sub(pc + 1).ok_or(())
                }
            }
        };
        let short = |n: usize| u8::try_from(n).map_err(drop);
        self.ops
            .iter()
            .enumerate()
            .map(|(pc, op)| {
                Ok(match *op {
                    Op::Stmt(code, k) => Insn {
                        code,
                        jt: 0,
                        jf: 0,
                        k,
                    },
                    Op::Jump(code, k, t, f) => Insn {
                        code,
                        jt: short(offset(pc, t)?)?,
                        jf: short(offset(pc, f)?)?,
                        k,
                    },
                    Op::Ja(l) => Insn {
                        code: JA,
                        jt: 0,
                        jf: 0,
                        k: u32::try_from(offset(pc, Some(l))?).map_err(drop)?,
                    },
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_assembles_with_many_ports() {
        let ports: Vec<u16> = (5000..5040).collect();
        let prog = default_program(&ports, 262_144).unwrap();
        assert!(prog.len() < 4096);
        assert_eq!(prog.last().map(|i| i.code), Some(RET_K));
        // every jump lands inside the program
        for (pc, i) in prog.iter().enumerate() {
            if i.code == JA {
                assert!(pc + 1 + (i.k as usize) < prog.len());
            } else if i.code & 0x07 == 0x05 {
                assert!(pc + 1 + usize::from(i.jt.max(i.jf)) < prog.len());
            }
        }
        let too_many: Vec<u16> = (5000..5400).collect();
        assert!(default_program(&too_many, 100).is_err());
    }
}
