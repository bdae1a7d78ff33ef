//! Classic pcap: the global header and the records (microsecond and nanosecond, both byte
//! orders). The global header is parsed by the `pcap-file` crate; each record is read here, in
//! place in the reader's buffer, so nothing is allocated per frame.

use std::path::Path;

use pcap_file::pcap::PcapParser;
use pcap_file::{Endianness, TsResolution};

use super::error::{CaptureError, StepError, io_err, pcap_error_reason};
use super::input::{Current, Input, MAX_RECORD_LEN, read_u32};
use crate::frame::LinkType;

const PCAP_HEADER_LEN: usize = 24;
const PCAP_RECORD_HEADER_LEN: usize = 16;
/// Seconds a record of a chain may be from its first (a capture of longer does not look like
/// random bytes either way).
const SYNC_SPREAD_S: u32 = 86_400;

/// The four magic numbers: microseconds or nanoseconds, as read big-endian from either order.
pub(super) const MAGICS: [u32; 4] = [0xA1B2_C3D4, 0xD4C3_B2A1, 0xA1B2_3C4D, 0x4D3C_B2A1];

/// A pcap file being read: its global header's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Pcap {
    pub(super) big: bool,
    pub(super) nanos: bool,
    pub(super) link: LinkType,
}

/// Parses the pcap global header (the magic number is known to be a pcap one).
pub(super) fn open(path: &Path, input: &mut Input) -> Result<Pcap, CaptureError> {
    let have = input.ensure(PCAP_HEADER_LEN).map_err(|e| io_err(path, e))?;
    if have < PCAP_HEADER_LEN {
        return Err(CaptureError::TruncatedHeader {
            path: path.to_owned(),
            what: "pcap header",
            need: PCAP_HEADER_LEN,
            have,
        });
    }
    let parser = match PcapParser::new(input.avail()) {
        Ok((_, parser)) => parser,
        Err(e) => {
            return Err(CaptureError::Malformed {
                path: path.to_owned(),
                what: "pcap header",
                offset: 0,
                reason: pcap_error_reason(e),
            });
        }
    };
    input.consume(PCAP_HEADER_LEN);
    let header = parser.header();
    Ok(Pcap {
        big: header.endianness == Endianness::Big,
        nanos: header.ts_resolution == TsResolution::NanoSecond,
        // The upper bits may carry FCS information (LT_LINKTYPE in libpcap).
        link: LinkType(u32::from(header.datalink) & 0x03FF_FFFF),
    })
}

impl Pcap {
    /// The first position of `window` where a record seems to start ([`super::SYNC_RECORDS`]
    /// plausible records in a row: a fraction below its unit, 0 < captured <= original
    /// length, seconds within a day of each other); `left` is how far the file goes past the
    /// window's first byte.
    pub(super) fn record_start(&self, window: &[u8], left: u64) -> Option<usize> {
        (0..window.len()).find(|&p| self.chain_at(window, p, left))
    }

    fn chain_at(&self, window: &[u8], p: usize, left: u64) -> bool {
        let frac_limit = if self.nanos { 1_000_000_000 } else { 1_000_000 };
        let mut q = p;
        let mut first_sec = None;
        for n in 0..super::SYNC_RECORDS {
            if q as u64 == left {
                return n > 0;
            }
            let Some(header) = window.get(q..q + PCAP_RECORD_HEADER_LEN) else {
                return n >= super::SYNC_MIN;
            };
            let field = |at| read_u32(header, at, self.big).unwrap_or(0);
            let (sec, frac, incl, orig) = (field(0), field(4), field(8), field(12));
            let first = *first_sec.get_or_insert(sec);
            if frac >= frac_limit
                || incl == 0
                || incl > orig
                || incl as usize > MAX_RECORD_LEN - PCAP_RECORD_HEADER_LEN
                || sec.abs_diff(first) > SYNC_SPREAD_S
            {
                return false;
            }
            q += PCAP_RECORD_HEADER_LEN + incl as usize;
            if q as u64 > left {
                return false;
            }
        }
        true
    }

    /// The next record's frame into `cur` (all but its number), `false` at the end of the
    /// input (`cur` is then as it was).
    pub(super) fn next(&self, input: &mut Input, cur: &mut Current) -> Result<bool, StepError> {
        next(input, self.big, self.nanos, self.link, cur)
    }
}

fn next(
    input: &mut Input,
    big: bool,
    nanos: bool,
    link: LinkType,
    cur: &mut Current,
) -> Result<bool, StepError> {
    let offset = input.offset();
    let have = input.ensure(PCAP_RECORD_HEADER_LEN)?;
    if have == 0 {
        return Ok(false);
    }
    if have < PCAP_RECORD_HEADER_LEN {
        return Err(StepError::RecordHeader {
            what: "record",
            offset,
            need: PCAP_RECORD_HEADER_LEN,
            left: have,
        });
    }
    let incl = read_u32(input.avail(), 8, big).unwrap_or(0);
    let incl_len = incl as usize;
    if incl_len > MAX_RECORD_LEN - PCAP_RECORD_HEADER_LEN {
        return Err(StepError::Malformed {
            what: "record",
            offset,
            reason: format!(
                "record says {incl_len} bytes, more than the {MAX_RECORD_LEN} byte limit"
            )
            .into(),
        });
    }
    let need = PCAP_RECORD_HEADER_LEN + incl_len;
    let offset = input.offset();
    let have = input.ensure(need)?;
    if have < need {
        return Err(StepError::Record {
            what: "record",
            offset,
            says: incl_len as u64,
            left: (have - PCAP_RECORD_HEADER_LEN) as u64,
        });
    }
    // The record header was checked whole above (`ensure(need)`): its fields are read in place
    // rather than through pcap-file's parser, which would check the lengths again.
    let header = input.avail();
    let field = |at| read_u32(header, at, big).unwrap_or(0);
    let (ts_sec, ts_frac, orig_len) = (field(0), field(4), field(12));
    let frac_ns = if nanos {
        u64::from(ts_frac)
    } else {
        u64::from(ts_frac) * 1000
    };
    cur.set_frame(&Current {
        time_ns: u64::from(ts_sec) * 1_000_000_000 + frac_ns,
        caplen: incl,
        orig_len,
        link: link.0,
        start: input.pos + PCAP_RECORD_HEADER_LEN,
        len: incl_len,
        number: 0,
    });
    input.consume(need);
    Ok(true)
}
