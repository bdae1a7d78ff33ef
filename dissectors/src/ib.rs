//! InfiniBand headers: the LRH of native packets, the BTH and its extension headers as
//! carried by native InfiniBand and by RoCE, PSN/QPN arithmetic and the opcode table.

pub mod aeth;
pub mod atomic_ack_eth;
pub mod atomic_eth;
pub mod bth;
pub mod cnp;
pub mod dc;
pub mod deth;
pub mod feth;
pub mod ieth;
pub mod immdt;
pub mod lrh;
pub mod mad;
pub mod opcode;
pub mod psn;
pub mod rdeth;
pub mod reth;
pub mod xrceth;
