//! Classic pcap: the global header and the records (microsecond and nanosecond, both byte
//! orders). The framing is parsed by the `pcap-file` crate; the record is read here into the
//! reader's buffer, so nothing is allocated per frame.

use std::path::Path;

use pcap_file::pcap::PcapParser;
use pcap_file::{Endianness, TsResolution};

use super::input::{Input, read_u32};
use super::{CaptureError, Current, Format, MAX_RECORD_LEN, StepError, io_err, pcap_error_reason};
use crate::frame::LinkType;

const PCAP_HEADER_LEN: usize = 24;
const PCAP_RECORD_HEADER_LEN: usize = 16;

/// Parses the pcap global header (the magic number is known to be a pcap one).
pub(super) fn open_pcap(path: &Path, input: &mut Input) -> Result<Format, CaptureError> {
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
    Ok(Format::Pcap {
        big: header.endianness == Endianness::Big,
        nanos: header.ts_resolution == TsResolution::NanoSecond,
        // The upper bits may carry FCS information (LT_LINKTYPE in libpcap).
        link: LinkType(u32::from(header.datalink) & 0x03FF_FFFF),
        parser,
    })
}

pub(super) fn next_pcap(
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
