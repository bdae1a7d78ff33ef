//! pcapng: section headers (either byte order, several sections), interface descriptions with
//! their `if_tsresol` and `if_tsoffset`, and the packet blocks (EPB, SPB, the obsolete PB),
//! decoded here straight from the input buffer. (`pcap-file` 2.0 ignores `if_tsresol`, keeps the
//! padding of SPBs, allocates for options, and refuses a whole file for one comment or interface
//! name that is not UTF-8; options the reader does not need are skipped unread.)

// Indexing cannot panic here: an eight-byte option value is copied after its length was checked.
#![allow(clippy::indexing_slicing)]

use std::borrow::Cow;
use std::path::Path;

use super::error::{CaptureError, StepError, io_err};
use super::input::{Current, Input, MAX_RECORD_LEN, read_u16, read_u32};
use crate::frame::LinkType;

mod magic {
    /// pcapng byte-order magic, as read big-endian.
    pub const BOM_BE: u32 = 0x1A2B_3C4D;
    pub const BOM_LE: u32 = 0x4D3C_2B1A;
}

/// The section header block's type, which opens every pcapng file (a palindrome: the same in
/// both byte orders).
pub(super) const MAGIC: u32 = block::SECTION_HEADER;

/// A pcapng file being read: the current section's byte order and interfaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct PcapNg {
    big: bool,
    ifaces: Vec<Iface>,
}

impl PcapNg {
    /// The first position of `window` (which starts at `start` in the file) where an enhanced
    /// packet block seems to start: 4-byte aligned in the file, and the first of
    /// [`super::SYNC_RECORDS`] plausible blocks in a row (a length of at least 12 and a
    /// multiple of 4, repeated at the block's end); `left` is how far the file goes past the
    /// window's first byte. Starting on an enhanced packet block, no simple packet block takes
    /// its time from a frame before the point. A new section ends the chain (its byte order
    /// may differ).
    pub(super) fn block_start(&self, window: &[u8], start: u64, left: u64) -> Option<usize> {
        let aligned = ((4 - start % 4) % 4) as usize;
        (aligned..window.len())
            .step_by(4)
            .find(|&p| self.chain_at(window, p, left))
    }

    fn chain_at(&self, window: &[u8], p: usize, left: u64) -> bool {
        let mut q = p;
        for n in 0..super::SYNC_RECORDS {
            if q as u64 == left {
                return n > 0;
            }
            let (Some(kind), Some(len)) = (
                read_u32(window, q, self.big),
                read_u32(window, q + 4, self.big),
            ) else {
                return n >= super::SYNC_MIN;
            };
            if n == 0 && kind != block::ENHANCED_PACKET {
                return false;
            }
            if kind == block::SECTION_HEADER {
                return n >= super::SYNC_MIN;
            }
            let len = len as usize;
            if len < 12 || !len.is_multiple_of(4) || len > MAX_RECORD_LEN {
                return false;
            }
            match read_u32(window, q + len - 4, self.big) {
                Some(trailer) if trailer as usize == len => {}
                Some(_) => return false,
                None => return n >= super::SYNC_MIN,
            }
            q += len;
            if q as u64 > left {
                return false;
            }
        }
        true
    }

    /// The next packet block's frame into `cur` (all but its number), `false` at the end of
    /// the input (`cur` is then as it was); `last_time_ns` is the time a simple packet block
    /// (which has none) takes.
    pub(super) fn next(
        &mut self,
        input: &mut Input,
        last_time_ns: u64,
        cur: &mut Current,
    ) -> Result<bool, StepError> {
        next(input, &mut self.big, &mut self.ifaces, last_time_ns, cur)
    }
}

mod block {
    pub const SECTION_HEADER: u32 = 0x0A0D_0D0A;
    pub const INTERFACE_DESCRIPTION: u32 = 1;
    pub const PACKET: u32 = 2;
    pub const SIMPLE_PACKET: u32 = 3;
    pub const ENHANCED_PACKET: u32 = 6;
}

/// Timestamp unit of a pcapng interface (`if_tsresol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TsUnit {
    /// 10^-n seconds.
    Pow10(u8),
    /// 2^-n seconds.
    Pow2(u8),
}

impl TsUnit {
    fn from_tsresol(v: u8) -> Self {
        if v & 0x80 == 0 {
            TsUnit::Pow10(v)
        } else {
            TsUnit::Pow2(v & 0x7f)
        }
    }

    fn to_ns(self, ticks: u64) -> u128 {
        let ticks = u128::from(ticks);
        match self {
            TsUnit::Pow10(n) if n <= 9 => ticks * 10u128.pow(u32::from(9 - n)),
            TsUnit::Pow10(n) => 10u128
                .checked_pow(u32::from(n - 9))
                .map_or(0, |div| ticks / div),
            // ticks < 2^64, 10^9 < 2^30: the product fits in u128.
            TsUnit::Pow2(n) => (ticks * 1_000_000_000) >> n,
        }
    }
}

/// What the reader needs to know about one pcapng interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Iface {
    link: LinkType,
    snaplen: u32,
    unit: TsUnit,
    /// `if_tsoffset`, in nanoseconds.
    offset_ns: i128,
}

impl Iface {
    /// Decodes an Interface Description Block body: link type, snaplen and, among the options,
    /// `if_tsresol` (9) and `if_tsoffset` (14). Options past the block's end stop the walk.
    fn from_idb(body: &[u8], big: bool) -> Result<Self, Cow<'static, str>> {
        let (Some(link), Some(snaplen)) = (read_u16(body, 0, big), read_u32(body, 4, big)) else {
            return Err("interface description block shorter than 8 bytes".into());
        };
        let mut unit = TsUnit::Pow10(6);
        let mut offset_ns = 0i128;
        for (code, value) in options(body.get(8..).unwrap_or_default(), big) {
            match (code, value) {
                (9, [v, ..]) => unit = TsUnit::from_tsresol(*v),
                (14, v) if v.len() >= 8 => {
                    let mut b = [0u8; 8];
                    b.copy_from_slice(&v[..8]);
                    // A signed 64-bit count of seconds.
                    let secs = if big {
                        i64::from_be_bytes(b)
                    } else {
                        i64::from_le_bytes(b)
                    };
                    offset_ns = i128::from(secs) * 1_000_000_000;
                }
                _ => {}
            }
        }
        Ok(Iface {
            link: LinkType(u32::from(link)),
            snaplen,
            unit,
            offset_ns,
        })
    }

    fn time_ns(&self, ticks: u64) -> u64 {
        let ns = i128::try_from(self.unit.to_ns(ticks)).unwrap_or(i128::MAX) + self.offset_ns;
        u64::try_from(ns.max(0)).unwrap_or(u64::MAX)
    }
}

/// Checks the first section header block's framing (the block type is known to be SHB); the
/// block itself is then read as every other block is.
pub(super) fn open(path: &Path, input: &mut Input) -> Result<PcapNg, CaptureError> {
    let what = "pcapng section header";
    let have = input.ensure(12).map_err(|e| io_err(path, e))?;
    if have < 12 {
        return Err(CaptureError::TruncatedHeader {
            path: path.to_owned(),
            what,
            need: 12,
            have,
        });
    }
    let big = match read_u32(input.avail(), 8, true) {
        Some(magic::BOM_BE) => true,
        Some(magic::BOM_LE) => false,
        _ => {
            return Err(CaptureError::Malformed {
                path: path.to_owned(),
                what,
                offset: 0,
                reason: "bad byte-order magic".into(),
            });
        }
    };
    let len = read_u32(input.avail(), 4, big).unwrap_or(0) as usize;
    if !(28..=MAX_RECORD_LEN).contains(&len) || !len.is_multiple_of(4) {
        return Err(CaptureError::Malformed {
            path: path.to_owned(),
            what,
            offset: 0,
            reason: format!("bad block length {len}").into(),
        });
    }
    let have = input.ensure(len).map_err(|e| io_err(path, e))?;
    if have < len {
        return Err(CaptureError::TruncatedHeader {
            path: path.to_owned(),
            what,
            need: len,
            have,
        });
    }
    Ok(PcapNg {
        big,
        ifaces: Vec::new(),
    })
}

/// The options of a block: (code, value) until the end-of-options code or the area's end.
fn options(area: &[u8], big: bool) -> impl Iterator<Item = (u16, &[u8])> {
    let mut at = 0usize;
    std::iter::from_fn(move || {
        let code = read_u16(area, at, big)?;
        let len = usize::from(read_u16(area, at + 2, big)?);
        if code == 0 {
            return None;
        }
        let value = area.get(at + 4..at + 4 + len)?;
        at += 4 + len.next_multiple_of(4);
        Some((code, value))
    })
}

fn next(
    input: &mut Input,
    big: &mut bool,
    ifaces: &mut Vec<Iface>,
    last_time_ns: u64,
    cur: &mut Current,
) -> Result<bool, StepError> {
    const BLOCK_HEADER_LEN: usize = 8;
    const BLOCK_MIN_LEN: usize = 12;
    loop {
        let offset = input.offset();
        let have = input.ensure(BLOCK_MIN_LEN)?;
        if have == 0 {
            return Ok(false);
        }
        let avail = input.avail();
        let block_type = read_u32(avail, 0, *big).unwrap_or(0);
        // A new section may switch the byte order: its length is read in the order its own
        // byte-order magic gives.
        let len_big = if block_type == block::SECTION_HEADER {
            match read_u32(avail, 8, true) {
                Some(magic::BOM_BE) => true,
                Some(magic::BOM_LE) => false,
                Some(_) => {
                    return Err(StepError::Malformed {
                        what: "block",
                        offset,
                        reason: "section header with a bad byte-order magic".into(),
                    });
                }
                None => *big,
            }
        } else {
            *big
        };
        if have < BLOCK_MIN_LEN {
            return Err(StepError::RecordHeader {
                what: "block",
                offset,
                need: BLOCK_MIN_LEN,
                left: have,
            });
        }
        let len = read_u32(avail, 4, len_big).unwrap_or(0) as usize;
        if len < BLOCK_MIN_LEN || !len.is_multiple_of(4) || len > MAX_RECORD_LEN {
            return Err(StepError::Malformed {
                what: "block",
                offset,
                reason: format!("bad block length {len}").into(),
            });
        }
        let have = input.ensure(len)?;
        if have < len {
            return Err(StepError::Record {
                what: "block",
                offset,
                says: len as u64,
                left: have as u64,
            });
        }
        let avail = input.avail();
        let trailer = read_u32(avail, len - 4, len_big).unwrap_or(0);
        if trailer as usize != len {
            return Err(StepError::Malformed {
                what: "block",
                offset,
                reason: format!("trailing block length {trailer} differs from the leading {len}")
                    .into(),
            });
        }
        let body_start = input.pos + BLOCK_HEADER_LEN;
        let body = input
            .buf
            .get(body_start..input.pos + len - 4)
            .unwrap_or_default();
        let found = match block_type {
            block::SECTION_HEADER => {
                match (
                    body.len(),
                    read_u16(body, 4, len_big),
                    read_u16(body, 6, len_big),
                ) {
                    (16.., Some(1), _) => {}
                    (16.., Some(major), Some(minor)) => {
                        return Err(StepError::Malformed {
                            what: "section header",
                            offset,
                            reason: format!("unsupported pcapng version {major}.{minor}").into(),
                        });
                    }
                    _ => {
                        return Err(StepError::Malformed {
                            what: "section header",
                            offset,
                            reason: "section header shorter than 28 bytes".into(),
                        });
                    }
                }
                *big = len_big;
                ifaces.clear();
                None
            }
            block::INTERFACE_DESCRIPTION => match Iface::from_idb(body, *big) {
                Ok(iface) => {
                    ifaces.push(iface);
                    None
                }
                Err(reason) => Some(Err(reason)),
            },
            block::ENHANCED_PACKET => Some(packet_block(body, body_start, *big, ifaces, false)),
            block::PACKET => Some(packet_block(body, body_start, *big, ifaces, true)),
            block::SIMPLE_PACKET => Some(simple_packet_block(
                body,
                body_start,
                *big,
                ifaces,
                last_time_ns,
            )),
            // Name resolution, statistics, journal, secrets, custom and unknown blocks.
            _ => None,
        };
        match found {
            None => input.consume(len),
            Some(Ok(found)) => {
                input.consume(len);
                cur.set_frame(&found);
                return Ok(true);
            }
            Some(Err(reason)) => {
                return Err(StepError::Malformed {
                    what: "block",
                    offset,
                    reason,
                });
            }
        }
    }
}

/// Decodes an Enhanced Packet Block body (or the obsolete Packet Block, whose interface id is
/// 16 bits followed by a 16-bit drop count).
fn packet_block(
    body: &[u8],
    body_start: usize,
    big: bool,
    ifaces: &[Iface],
    obsolete: bool,
) -> Result<Current, Cow<'static, str>> {
    const FIXED: usize = 20;
    let name = if obsolete {
        "packet block"
    } else {
        "enhanced packet block"
    };
    let fields = (|| {
        let if_id = if obsolete {
            u32::from(read_u16(body, 0, big)?)
        } else {
            read_u32(body, 0, big)?
        };
        let ts_hi = read_u32(body, 4, big)?;
        let ts_lo = read_u32(body, 8, big)?;
        let caplen = read_u32(body, 12, big)?;
        let orig_len = read_u32(body, 16, big)?;
        Some((
            if_id,
            (u64::from(ts_hi) << 32) | u64::from(ts_lo),
            caplen,
            orig_len,
        ))
    })();
    let Some((if_id, ticks, caplen, orig_len)) = fields else {
        return Err(format!("{name} shorter than {FIXED} bytes").into());
    };
    if caplen as usize > body.len() - FIXED {
        return Err(format!(
            "{name} says {caplen} captured bytes, but holds {}",
            body.len() - FIXED
        )
        .into());
    }
    let Some(iface) = ifaces.get(if_id as usize) else {
        return Err(format!(
            "{name} refers to interface {if_id}, but {} are described",
            ifaces.len()
        )
        .into());
    };
    Ok(Current {
        number: 0,
        time_ns: iface.time_ns(ticks),
        caplen,
        orig_len,
        link: iface.link.0,
        start: body_start + FIXED,
        len: caplen as usize,
    })
}

/// Decodes a Simple Packet Block body. It has no timestamp: the frame gets the time of the
/// previous frame of the file (0 for the first), which keeps merges stable.
fn simple_packet_block(
    body: &[u8],
    body_start: usize,
    big: bool,
    ifaces: &[Iface],
    last_time_ns: u64,
) -> Result<Current, Cow<'static, str>> {
    let Some(orig_len) = read_u32(body, 0, big) else {
        return Err("simple packet block shorter than 4 bytes".into());
    };
    let Some(iface) = ifaces.first() else {
        return Err("simple packet block before any interface description".into());
    };
    let mut caplen = (body.len() - 4).min(orig_len as usize);
    if iface.snaplen != 0 {
        caplen = caplen.min(iface.snaplen as usize);
    }
    Ok(Current {
        number: 0,
        time_ns: last_time_ns,
        caplen: u32::try_from(caplen).unwrap_or(u32::MAX),
        orig_len,
        link: iface.link.0,
        start: body_start + 4,
        len: caplen,
    })
}
