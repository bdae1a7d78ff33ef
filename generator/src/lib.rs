//! Deterministic, scenario-driven RoCEv2 traffic generation (issue 3).
