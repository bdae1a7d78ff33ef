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
