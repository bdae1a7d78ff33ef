//! The streaming replay engine behind `rocescope analyze` (interfaces.md §6).
//!
//! Frames go in one at a time, in capture order ([`Engine::frame`], or [`Engine::packet`] for
//! hand-built [`PacketEvent`]s); each is summarised into an owned [`PacketEvent`] and stepped
//! through its flow's state machines. Per-flow request sequencing (§6.2) is the pure state
//! machine of [`psn`]; everything that crosses flows (pairing, responses acting on the
//! request flow, CNP attribution, PFC) is in [`engine`]. Memory grows with flows, open holes
//! and outstanding READs, never with the frame count (findings aside).
//!
//! - [`holes`]: missing PSN ranges;
//! - [`psn`]: §6.2 classification, READ consumption rules 1–4, go-back runs, held decisions;
//! - [`flow`]: per-flow counters, the READ response tracker (§6.3);
//! - [`latency`]: ACK latency samples;
//! - [`pfc`]: PFC/PAUSE intervals and storms (§6.4);
//! - [`finding`]: event kinds and details (§6.6).

pub mod engine;
pub mod event;
pub mod finding;
pub mod flow;
pub mod hash;
pub mod holes;
pub mod latency;
pub mod pfc;
pub mod psn;
pub mod tcp_bth;

pub use engine::{CaptureStats, Engine, EngineConfig, Replay};
pub use event::{FlowKey, Icrc, PacketEvent};
pub use finding::{Detail, Finding, Kind};
pub use flow::Flow;
pub use psn::{PsnStream, ReqPacket, step};
