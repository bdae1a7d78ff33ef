//! rocescope: read, write, replay and explain RoCEv2 traffic.
