//! Arbitrary packets of two taps through the matcher of `analyze --tap` (interfaces.md §6.8):
//! no panic, whatever the clocks, the estimate, the window, the flows (named or not, one tap
//! only, both ways), duplicated PSNs and times that go back; and what it reports adds up: no
//! flow matches more packets than either tap holds, every packet of a flow whose direction is
//! known is matched, dropped or appeared (within the window's reach), and every event names a
//! flow it reports.
#![no_main]

use std::net::{IpAddr, Ipv4Addr};

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use rocescope::replay::between::{Matcher, Sighting};
use rocescope::replay::{Addr, FlowKey};

#[derive(Debug, Arbitrary)]
struct Packet {
    tap: bool,
    /// One of four flows (two connections both ways), or a flow never named.
    flow: u8,
    /// Time steps, so that copies land near each other; sometimes a jump back or far ahead.
    step: u16,
    back: Option<u32>,
    opcode: u8,
    /// PSNs from a small range: copies of one PSN abound.
    psn: u8,
    icrc: Option<bool>,
    ce: bool,
}

#[derive(Debug, Arbitrary)]
struct Input {
    estimate_ns: i32,
    window_ns: u32,
    /// Upstream set beforehand for some flows.
    upstream: [Option<bool>; 4],
    packets: Vec<Packet>,
    pairs: Vec<(u8, u8)>,
}

fn key(i: u8) -> FlowKey {
    let ip = |x| Addr::Ip(IpAddr::V4(Ipv4Addr::new(10, 0, 0, x)));
    let (src, dst) = if i % 2 == 0 { (1, 2) } else { (2, 1) };
    FlowKey {
        src: ip(src),
        dst: ip(dst),
        dest_qp: u32::from(i),
    }
}

fuzz_target!(|input: Input| {
    let mut m = Matcher::new(i64::from(input.estimate_ns), u64::from(input.window_ns));
    for (i, up) in input.upstream.iter().enumerate() {
        if let Some(up) = up {
            m.set_upstream(key(i as u8), u8::from(*up));
        }
    }
    for tap in 0..2 {
        for i in 0..4u8 {
            m.flow(tap, u32::from(i), key(i));
        }
    }
    let mut t = [1_000_000_000u64; 2];
    let mut seen = [[0u64; 2]; 5];
    for (n, p) in input.packets.iter().take(4096).enumerate() {
        let tap = usize::from(p.tap);
        t[tap] = match p.back {
            Some(b) => t[tap].saturating_sub(u64::from(b)),
            None => t[tap].saturating_add(u64::from(p.step)),
        };
        let flow = p.flow % 5;
        seen[usize::from(flow)][tap] += 1;
        m.sighting(&Sighting {
            tap: u8::from(p.tap),
            frame: n as u64 + 1,
            time_ns: t[tap],
            opcode: p.opcode,
            psn: u32::from(p.psn),
            icrc: p.icrc,
            ce: p.ce,
            // flow 4 was never named: it is left out
            tap_flow: u32::from(flow),
        });
    }
    let pairs: Vec<(FlowKey, FlowKey)> = input
        .pairs
        .iter()
        .take(8)
        .map(|&(a, b)| (key(a % 4), key(b % 4)))
        .collect();
    let b = m.finish(pairs.iter().copied());
    assert!(b.flows.len() <= 4);
    for f in &b.flows {
        let i = usize::try_from(f.key.dest_qp).unwrap();
        assert_eq!(f.packets, seen[i], "{f:?}");
        let c = &f.counts;
        assert!(c.matched <= f.packets[0].min(f.packets[1]), "{f:?}");
        assert!(c.corrupted <= c.matched && c.ecn_marked <= c.matched && c.reordered <= c.matched);
        if let Some(up) = f.upstream {
            let (u, d) = (f.packets[usize::from(up)], f.packets[usize::from(1 - up)]);
            assert_eq!(c.matched + c.dropped, u, "{f:?}");
            assert_eq!(c.matched + c.appeared, d, "{f:?}");
        }
        assert!(f.delay.samples <= c.matched);
    }
    for e in &b.events {
        assert!((e.flow as usize) < b.flows.len());
    }
});
