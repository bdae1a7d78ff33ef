//! MPLS label stacks (EtherType 0x8847/0x8848; capture-formats.md §4.6): 4-byte entries
//! until the bottom-of-stack bit, then IPv4 or IPv6 by the first nibble.

// Indexing cannot panic here: header views index constant field ranges inside the header, whose
// length the checked constructor (`new_checked`) verified; `new_unchecked` callers promise the same
// (smoltcp's pattern).
#![allow(clippy::indexing_slicing)]

use crate::error::{self, Layer, Result, WireError};
use crate::visit::{Value, Visitor};

pub const ENTRY_LEN: usize = 4;
/// Labels followed at most.
pub const MAX_LABELS: usize = 8;

/// One label stack entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry(pub u32);

impl Entry {
    #[must_use]
    pub fn label(self) -> u32 {
        self.0 >> 12
    }
    #[must_use]
    pub fn tc(self) -> u8 {
        ((self.0 >> 9) & 7) as u8
    }
    #[must_use]
    pub fn bottom(self) -> bool {
        self.0 & 0x100 != 0
    }
    #[must_use]
    pub fn ttl(self) -> u8 {
        (self.0 & 0xFF) as u8
    }
    pub fn visit_fields(self, offset: usize, v: &mut impl Visitor) {
        let at = offset..offset + ENTRY_LEN;
        v.field(
            "label",
            "Label",
            Value::Uint(u64::from(self.label())),
            at.clone(),
        );
        v.field(
            "tc",
            "Traffic Class",
            Value::Uint(u64::from(self.tc())),
            at.clone(),
        );
        v.field(
            "s",
            "Bottom of Stack",
            Value::Bool(self.bottom()),
            at.clone(),
        );
        v.field("ttl", "TTL", Value::Uint(u64::from(self.ttl())), at);
    }
}

/// The stack's length in bytes (through the bottom entry).
///
/// # Errors
/// Truncated when the bottom entry is not in `b`; Unsupported past [`MAX_LABELS`].
pub fn stack_len(b: &[u8]) -> Result<usize> {
    for i in 0..MAX_LABELS {
        let at = i * ENTRY_LEN;
        error::need(Layer::Mpls, at + ENTRY_LEN, b.len())?;
        if b[at + 2] & 1 != 0 {
            return Ok(at + ENTRY_LEN);
        }
    }
    Err(WireError::Unsupported {
        layer: Layer::Mpls,
        offset: MAX_LABELS * ENTRY_LEN,
        value: MAX_LABELS as u32,
    })
}

/// The entries of a stack of `len` bytes (from [`stack_len`]).
pub fn entries(b: &[u8]) -> impl Iterator<Item = Entry> + '_ {
    b.chunks_exact(ENTRY_LEN)
        .map(|e| Entry(u32::from_be_bytes([e[0], e[1], e[2], e[3]])))
}

/// Write entries for `labels` (the last one bottom of stack, TTL 64); returns the length.
pub fn emit(buf: &mut [u8], labels: &[u32]) -> usize {
    for (i, &l) in labels.iter().enumerate() {
        let s = u32::from(i + 1 == labels.len()) << 8;
        let w = ((l & 0xF_FFFF) << 12) | s | 64;
        buf[i * ENTRY_LEN..(i + 1) * ENTRY_LEN].copy_from_slice(&w.to_be_bytes());
    }
    labels.len() * ENTRY_LEN
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn two_labels() {
        let mut b = [0u8; 8];
        assert_eq!(emit(&mut b, &[16, 1000]), 8);
        assert_eq!(stack_len(&b), Ok(8));
        let e: Vec<Entry> = entries(&b).collect();
        assert_eq!(
            (
                e[0].label(),
                e[0].bottom(),
                e[1].label(),
                e[1].bottom(),
                e[1].ttl()
            ),
            (16, false, 1000, true, 64)
        );
        assert!(stack_len(&b[..6]).is_err());
        assert!(stack_len(&[0u8; 40]).is_err()); // never ends
    }
}
