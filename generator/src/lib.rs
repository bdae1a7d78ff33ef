//! Deterministic, scenario-driven RoCEv2 traffic generation (issue 3).
//!
//! A [`Scenario`] (TOML, see `generator/scenarios/`) describes hosts,
//! connections, a traffic mix, responder behaviour and faults. A
//! [`Generator`] runs a deterministic event model of requesters, a switch
//! (where the faults and PFC act) and responders, and builds every captured
//! frame with the dissectors' builders into the caller's buffer. The same
//! scenario and seed always give the same bytes. [`Generator::truth`] states
//! what interfaces.md §6 says the capture shows, in the JSON report's keys.
//!
//! The event model is in `sim` (the types, the event loop and dispatch), with one file per
//! side: `sim/requester.rs`, `sim/responder.rs`, `sim/switch.rs` (with the faults) and
//! `sim/frames.rs` (frame building); opcodes come from the dissectors' table
//! (`Opcode::lookup`). `scenario` parses and validates the TOML, `truth` states what the
//! capture must show, `tcp_bth` models RDMA messages over TCP.
//!
//! The crate does no I/O and never panics on scenario input.

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

mod events;
mod rng;
pub mod scenario;
mod sim;
pub mod tcp_bth;
pub mod truth;

pub use scenario::{CapturePoint, Scenario, ScenarioError};
pub use sim::{FrameOut, GenError, Generator, MAX_FRAME_LEN, TapRecord};
pub use tcp_bth::TcpBthTruth;
pub use truth::{CaptureTruth, FlowTruth, Naks, PfcTruth, Truth};
