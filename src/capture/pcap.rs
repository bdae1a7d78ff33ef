//! Classic pcap: the global header and the records (microsecond and nanosecond, both byte
//! orders). The framing is parsed by the `pcap-file` crate; the record is read here into the
//! reader's buffer, so nothing is allocated per frame.

use std::path::Path;

use pcap_file::pcap::PcapParser;
use pcap_file::{Endianness, TsResolution};

use super::error::{CaptureError, StepError, io_err, pcap_error_reason};
use super::input::{Current, Input, MAX_RECORD_LEN, read_u32};
use crate::frame::LinkType;

const PCAP_HEADER_LEN: usize = 24;
const PCAP_RECORD_HEADER_LEN: usize = 16;

/// The four magic numbers: microseconds or nanoseconds, as read big-endian from either order.
pub(super) const MAGICS: [u32; 4] = [0xA1B2_C3D4, 0xD4C3_B2A1, 0xA1B2_3C4D, 0x4D3C_B2A1];

/// A pcap file being read: its global header's settings.
pub(super) struct Pcap {
    parser: PcapParser,
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
        parser,
    })
}

impl Pcap {
    /// The next record's frame, `None` at the end of the input.
    pub(super) fn next(&self, input: &mut Input) -> Result<Option<Current>, StepError> {
        next(input, &self.parser, self.big, self.nanos, self.link)
    }
}

fn next(
    input: &mut Input,
    parser: &PcapParser,
    big: bool,
    nanos: bool,
    link: LinkType,
) -> Result<Option<Current>, StepError> {
    let offset = input.offset();
    let have = input.ensure(PCAP_RECORD_HEADER_LEN)?;
    if have == 0 {
        return Ok(None);
    }
    if have < PCAP_RECORD_HEADER_LEN {
        return Err(StepError::RecordHeader {
            what: "record",
            offset,
            need: PCAP_RECORD_HEADER_LEN,
            left: have,
        });
    }
    let incl_len = read_u32(input.avail(), 8, big).unwrap_or(0) as usize;
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
    let cur = match parser.next_raw_packet(input.avail()) {
        Ok((_, raw)) => {
            let frac = u64::from(raw.ts_frac);
            let frac_ns = if nanos { frac } else { frac * 1000 };
            Current {
                number: 0,
                time_ns: u64::from(raw.ts_sec) * 1_000_000_000 + frac_ns,
                caplen: raw.incl_len,
                orig_len: raw.orig_len,
                link: link.0,
                start: input.pos + PCAP_RECORD_HEADER_LEN,
                len: incl_len,
            }
        }
        Err(e) => {
            return Err(StepError::Malformed {
                what: "record",
                offset,
                reason: pcap_error_reason(e),
            });
        }
    };
    input.consume(need);
    Ok(Some(cur))
}
