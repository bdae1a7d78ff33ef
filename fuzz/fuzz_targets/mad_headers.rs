//! Any bytes as the payload of a UD SEND ONLY to QP0 or QP1 (native InfiniBand with an LRH,
//! and RoCEv2): the management datagram's common header, its names and field walk.
//!
//! Invariants: never a panic; `Roce::mad()` is present exactly when the payload holds the
//! 24-byte header; its fields are the payload's bytes; class, method and attribute names
//! come from the tables (never empty); the field walk stays inside the frame and pairs its
//! opens and closes; `Roce::cm()` is only ever present with a CM-class `mad()`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocescope_dissectors::ib::mad;
use rocescope_dissectors::pretty;
use rocescope_dissectors::stack::{self, DissectOptions, Start};
use rocescope_dissectors::visit::{Value, Visitor};

struct Walk {
    len: usize,
    depth: isize,
    mad_fields: usize,
    in_mad: bool,
}

impl Visitor for Walk {
    fn begin(&mut self, key: &'static str, _: &'static str, r: core::ops::Range<usize>) {
        assert!(
            r.start <= r.end && r.end <= self.len,
            "{r:?} past {}",
            self.len
        );
        self.in_mad = key == "mad";
        self.depth += 1;
    }
    fn end(&mut self) {
        self.in_mad = false;
        self.depth -= 1;
        assert!(self.depth >= 0);
    }
    fn begin_list(&mut self, _: &'static str, _: &'static str, r: core::ops::Range<usize>) {
        assert!(r.start <= r.end && r.end <= self.len);
        self.depth += 1;
    }
    fn end_list(&mut self) {
        self.depth -= 1;
    }
    fn field(
        &mut self,
        _: &'static str,
        _: &'static str,
        _: Value<'_>,
        r: core::ops::Range<usize>,
    ) {
        assert!(
            r.start <= r.end && r.end <= self.len,
            "{r:?} past {}",
            self.len
        );
        if self.in_mad {
            self.mad_fields += 1;
        }
    }
}

/// LRH (local) + BTH (UD SEND ONLY to `qp`) + DETH, then `payload`, ICRC and VCRC space.
fn native(qp: u8, payload: &[u8]) -> Vec<u8> {
    let words = (8 + 12 + 8 + payload.len() + 4).div_ceil(4);
    let pkt_len = u16::try_from(words.min(0x7FF)).unwrap();
    let mut f = vec![0xF0, 0x02, 0, 0x12];
    f.extend_from_slice(&pkt_len.to_be_bytes());
    f.extend_from_slice(&[0, 1]);
    f.extend_from_slice(&[0x64, 0, 0xFF, 0xFF, 0, 0, 0, qp, 0, 0, 0, 7]);
    f.extend_from_slice(&[0x80, 0x01, 0, 0, 0, 0, 0, qp]);
    f.extend_from_slice(payload);
    while f.len() % 4 != 0 {
        f.push(0);
    }
    f.extend_from_slice(&[0; 6]);
    f
}

fn check(frame: &[u8], start: Start, payload: &[u8]) {
    let (d, _err) = stack::dissect_with(frame, start, &DissectOptions::default());
    let mut w = Walk {
        len: frame.len(),
        depth: 0,
        mad_fields: 0,
        in_mad: false,
    };
    pretty::visit(&d, &mut w);
    assert_eq!(w.depth, 0);
    let Some(roce) = d.roce else { return };
    let m = roce.mad();
    if roce.payload.len() >= 24 && payload.get(..roce.payload.len()) == Some(roce.payload) {
        let m = m.expect("a whole MAD header");
        assert_eq!(m.mgmt_class(), payload[1]);
        assert_eq!(m.method_byte(), payload[3]);
        assert_eq!(
            m.attribute_id(),
            u16::from_be_bytes([payload[16], payload[17]])
        );
        assert!(!m.class_name().is_empty());
        assert!(!mad::method_name(m.method_byte()).is_empty());
        let _ = mad::attribute_name(m.mgmt_class(), m.attribute_id());
        assert_eq!(w.mad_fields, 11);
    }
    if m.is_none() {
        assert_eq!(w.mad_fields, 0);
    }
    if roce.cm().is_some() {
        assert_eq!(m.map(|h| h.mgmt_class()), Some(mad::class::CM));
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, payload)) = data.split_first() else {
        return;
    };
    let payload = &payload[..payload.len().min(1024)];
    let qp = sel & 1;
    check(&native(qp, payload), Start::Infiniband, payload);
    // the same datagram over RoCEv2
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    let udp_len = 8 + 12 + 8 + payload.len() + 4;
    let total = u16::try_from(20 + udp_len).unwrap();
    f.extend_from_slice(&[
        0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ]);
    f[16..18].copy_from_slice(&total.to_be_bytes());
    f.extend_from_slice(&[0xC0, 0, 0x12, 0xB7]);
    f.extend_from_slice(&u16::try_from(udp_len).unwrap().to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(&[0x64, 0, 0xFF, 0xFF, 0, 0, 0, qp, 0, 0, 0, 7]);
    f.extend_from_slice(&[0x80, 0x01, 0, 0, 0, 0, 0, qp]);
    f.extend_from_slice(payload);
    f.extend_from_slice(&[0; 4]);
    check(&f, Start::Ethernet, payload);
});
