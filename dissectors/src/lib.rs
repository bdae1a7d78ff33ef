//! Zero-copy dissectors and builders for RoCEv2 / RoCEv1 frames.
//!
//! # Panic contract
//! Like smoltcp's `wire` module: every `Header::new_checked` / `Packet::new_checked`
//! validates the length once, after which no accessor can panic. Whole-frame
//! [`dissect`] and [`dissect_lax`] never panic on any input; they return a
//! [`WireError`] naming the layer and offset instead. `new_unchecked` views
//! are for emitting into buffers the caller sized with `buffer_len()`.
//!
//! # Layout
//! - one module per header (`ethernet`, `vlan`, `sll`, `sll2`, `ipv4`, `ipv6`, `grh`, `udp`,
//!   `tcp`, `tcp_bth`, `mac_control`, `cm`, and under `ib` the BTH and every extension header),
//!   each in the same order: `mod field` (byte ranges), the view, accessors, setters, `Repr`,
//!   a `visit_fields` that renders its fields from `mod field`, `Display`, tests;
//! - [`ib::opcode`]: the one opcode table (a macro, one line per opcode) and
//!   [`Opcode::lookup`], the table read backwards;
//! - [`link`]: link types and where dissection starts on each;
//! - [`stack`]: the only place layers are composed ([`stack::dissect`], `dissect_lax`,
//!   `dissect_with`);
//! - [`visit`] (the field-tree vocabulary) and [`pretty`] (the walk over a frame's layers);
//! - [`icrc`] and [`checksum`]; [`builder`] (frames built in the caller's buffer).
//!
//! No I/O happens here; captures, CLI and analysis live in the `rocescope` crate.

// No unsafe code here at all (the workspace lint is only `deny`, for the one module of the
// `rocescope` crate that needs it).
#![forbid(unsafe_code)]
// Input never panics the library: no unwrap, expect or panic outside tests, and an index that
// could fail only in a module that says, at its top, why it cannot.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing
    )
)]

// The unit tests share the bench's frame builder, which names this crate by its name.
#[cfg(test)]
extern crate self as rocescope_dissectors;

pub mod builder;
pub mod checksum;
pub mod cm;
pub mod encap;
pub mod erf;
pub mod error;
pub mod ethernet;
pub mod field;
pub mod grh;
pub mod ib;
pub mod icrc;
pub mod ipoib;
pub mod ipv4;
pub mod ipv6;
pub mod link;
pub mod mac_control;
pub mod pretty;
pub mod sll;
pub mod sll2;
pub mod stack;
pub mod tcp;
pub mod tcp_bth;
pub mod udp;
pub mod visit;
pub mod vlan;

#[cfg(any(test, feature = "proptest"))]
pub mod strategy;

pub use error::{Layer, Malformed, Result, WireError};
pub use ib::bth::{HEADER_LEN as BTH_HEADER_LEN, Header as BthHeader, Repr as BthRepr};
pub use ib::opcode::{ExtHeader, Opcode, OpcodeInfo, Operation, Position, Transport};
pub use ib::psn::{Psn, Qpn};
pub use stack::{dissect, dissect_lax};
