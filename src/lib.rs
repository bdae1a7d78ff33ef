//! rocescope: read, write, replay and explain RoCEv2 traffic.
pub mod capture;
pub mod sink;
