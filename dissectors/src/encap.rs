//! The layers a mirror session or a tunnel wraps a frame in (capture-formats.md §4): GRE,
//! ERSPAN, VXLAN, Geneve, MPLS. The dissector unwraps them ([`crate::stack`]) and dissects
//! the innermost frame as if it had been captured directly, keeping these as its outer
//! layers.

pub mod erspan;
pub mod gre;
pub mod mpls;
pub mod vxlan;

use crate::error::{Layer, Result, WireError};
use crate::ethernet::EtherType;

/// Encapsulations followed at most, one inside the other (a loop of GRE in GRE stops here).
pub const MAX_DEPTH: u8 = 4;

/// Where an encapsulated frame starts and what it starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inner {
    /// An Ethernet frame (without FCS) at this offset.
    Ethernet(usize),
    /// A network header of this EtherType at this offset.
    Network(EtherType, usize),
    /// Nothing this crate decodes follows (an unknown GRE protocol or ERSPAN III frame type).
    None,
}

/// What follows a GRE header at `at` (its header checked against the frame).
///
/// # Errors
/// The GRE or ERSPAN header is cut short.
pub fn after_gre(frame: &[u8], at: usize) -> Result<Inner> {
    let rest = frame.get(at..).unwrap_or(&[]);
    let g = gre::Header::new_checked(rest).map_err(|e| e.rebased(at))?;
    let after = at + g.header_len();
    Ok(match g.protocol() {
        // Type I: no sequence number, Ethernet right after
        gre::proto::ERSPAN_88BE if !g.has(gre::FLAG_SEQUENCE) => Inner::Ethernet(after),
        gre::proto::ERSPAN_88BE | gre::proto::ERSPAN_22EB => {
            let e = erspan::Header::new_checked(frame.get(after..).unwrap_or(&[]))
                .map_err(|e| e.rebased(after))?;
            let inner = after + e.header_len();
            match (e.is_type3(), e.frame_type()) {
                (false, _) | (true, 0) => Inner::Ethernet(inner),
                // frame type 2: an IP packet, its version in the first nibble
                (true, 2) => match frame.get(inner).map(|b| b >> 4) {
                    Some(4) => Inner::Network(EtherType::IPV4, inner),
                    Some(6) => Inner::Network(EtherType::IPV6, inner),
                    _ => Inner::None,
                },
                _ => Inner::None,
            }
        }
        gre::proto::TEB => Inner::Ethernet(after),
        p => match EtherType(p) {
            t @ (EtherType::IPV4
            | EtherType::IPV6
            | EtherType::MPLS
            | EtherType::MPLS_MULTICAST) => Inner::Network(t, after),
            _ => Inner::None,
        },
    })
}

/// What follows a VXLAN (`geneve` false) or Geneve header at `at`.
///
/// # Errors
/// The header is cut short.
pub fn after_udp_tunnel(frame: &[u8], at: usize, geneve: bool) -> Result<Inner> {
    let rest = frame.get(at..).unwrap_or(&[]);
    if !geneve {
        vxlan::Vxlan::new_checked(rest).map_err(|e| e.rebased(at))?;
        return Ok(Inner::Ethernet(at + vxlan::HEADER_LEN));
    }
    let g = vxlan::Geneve::new_checked(rest).map_err(|e| e.rebased(at))?;
    let after = at + g.header_len();
    Ok(match EtherType(g.protocol()) {
        EtherType(0x6558) => Inner::Ethernet(after),
        t @ (EtherType::IPV4 | EtherType::IPV6) => Inner::Network(t, after),
        _ => Inner::None,
    })
}

/// What follows an MPLS label stack at `at`: IPv4 or IPv6 by the first nibble.
///
/// # Errors
/// The stack is cut short or deeper than [`mpls::MAX_LABELS`].
pub fn after_mpls(frame: &[u8], at: usize) -> Result<Inner> {
    let n = mpls::stack_len(frame.get(at..).unwrap_or(&[])).map_err(|e| e.rebased(at))?;
    let after = at + n;
    Ok(match frame.get(after).map(|b| b >> 4) {
        Some(4) => Inner::Network(EtherType::IPV4, after),
        Some(6) => Inner::Network(EtherType::IPV6, after),
        _ => Inner::None,
    })
}

/// The error past [`MAX_DEPTH`] nested encapsulations.
#[must_use]
pub const fn too_deep(offset: usize) -> WireError {
    WireError::Malformed {
        layer: Layer::Encap,
        offset,
        reason: crate::error::Malformed::TooDeep { max: MAX_DEPTH },
    }
}
