//! Capture file input: pcap and pcapng, one file, standard input or several files merged by time.
//!
//! The readers are *lending* iterators: [`CaptureReader::next_frame`] returns a [`Frame`] that
//! borrows the reader's internal buffer until the next call. Nothing is allocated per frame; the
//! input is read in large chunks (1 MiB) into one reusable buffer, so captures larger than RAM and
//! pipes (`-` = standard input) work the same way.
//!
//! Record and block framing, the pcap global header and the pcapng section/interface blocks are
//! parsed by the `pcap-file` crate (`PcapParser::next_raw_packet`, `PcapNgParser::next_raw_block`).
//! The packet blocks themselves (EPB, SPB, obsolete PB) are decoded here, because `pcap-file` 2.0
//! ignores `if_tsresol`, keeps the padding of SPBs and allocates for EPB options.
//!
//! Errors are [`CaptureError`]s whose `Display` is one line naming the file and the reason. After a
//! reader has returned an error it is finished: the next call returns `None`. Frames before the
//! error have been delivered. Unknown pcapng block types are skipped; unknown link types are not an
//! error (the frame carries its [`LinkType`] and the dissector reports it).

pub mod index;

use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use pcap_file::pcap::PcapParser;
use pcap_file::pcapng::PcapNgParser;
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use pcap_file::{Endianness, PcapError, TsResolution};

/// Size of the read buffer (and the unit of each `read` call on the input).
const BUF_SIZE: usize = 1 << 20;

/// Largest pcap record or pcapng block accepted. Anything larger is taken as corruption rather
/// than a reason to allocate that much.
pub const MAX_RECORD_LEN: usize = 64 << 20;

const PCAP_HEADER_LEN: usize = 24;
const PCAP_RECORD_HEADER_LEN: usize = 16;

mod magic {
    pub const PCAP_US_BE: u32 = 0xA1B2_C3D4;
    pub const PCAP_US_LE: u32 = 0xD4C3_B2A1;
    pub const PCAP_NS_BE: u32 = 0xA1B2_3C4D;
    pub const PCAP_NS_LE: u32 = 0x4D3C_B2A1;
    /// pcapng section header block type (a palindrome, the same in both byte orders).
    pub const PCAPNG_SHB: u32 = 0x0A0D_0D0A;
    /// pcapng byte-order magic, as read big-endian.
    pub const PCAPNG_BOM_BE: u32 = 0x1A2B_3C4D;
    pub const PCAPNG_BOM_LE: u32 = 0x4D3C_2B1A;
}

mod block {
    pub const SECTION_HEADER: u32 = 0x0A0D_0D0A;
    pub const INTERFACE_DESCRIPTION: u32 = 1;
    pub const PACKET: u32 = 2;
    pub const SIMPLE_PACKET: u32 = 3;
    pub const ENHANCED_PACKET: u32 = 6;
}

/// Link-layer header type of a frame (the tcpdump.org `LINKTYPE_` registry), an open newtype.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LinkType(pub u32);

impl LinkType {
    /// `LINKTYPE_ETHERNET`: Ethernet II / 802.3.
    pub const ETHERNET: LinkType = LinkType(1);
    /// `LINKTYPE_LINUX_SLL`: Linux cooked capture v1 (`tcpdump -i any`, older libpcap).
    pub const LINUX_SLL: LinkType = LinkType(113);
    /// `LINKTYPE_LINUX_SLL2`: Linux cooked capture v2 (`tcpdump -i any`, libpcap ≥ 1.10).
    pub const LINUX_SLL2: LinkType = LinkType(276);

    /// Whether the dissector can start on frames of this link type.
    #[must_use]
    pub fn is_supported(self) -> bool {
        matches!(self, Self::ETHERNET | Self::LINUX_SLL | Self::LINUX_SLL2)
    }

    /// The registry name (`ETHERNET`, `LINUX_SLL`, `LINUX_SLL2`), `None` for other values.
    #[must_use]
    pub fn name(self) -> Option<&'static str> {
        match self {
            Self::ETHERNET => Some("ETHERNET"),
            Self::LINUX_SLL => Some("LINUX_SLL"),
            Self::LINUX_SLL2 => Some("LINUX_SLL2"),
            _ => None,
        }
    }
}

impl fmt::Display for LinkType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "LINKTYPE({})", self.0),
        }
    }
}

/// One captured frame, borrowed from the reader's buffer until the reader's next call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame<'a> {
    /// 1-based frame number: file order for one file, merged order for several.
    pub number: u64,
    /// Capture timestamp, nanoseconds since the Unix epoch.
    pub time_ns: u64,
    /// Number of bytes captured (`data.len()`).
    pub caplen: u32,
    /// Length of the frame on the wire.
    pub orig_len: u32,
    /// Link-layer type of `data` (per interface in pcapng).
    pub link: LinkType,
    /// The captured bytes, starting with the link-layer header.
    pub data: &'a [u8],
}

impl Frame<'_> {
    /// True when fewer bytes were captured than were on the wire (snaplen cut).
    #[must_use]
    pub fn truncated(&self) -> bool {
        self.caplen < self.orig_len
    }
}

/// Linux cooked capture v1 (`LINKTYPE_LINUX_SLL`, 16-byte header): the protocol field (an
/// `EtherType` for ordinary packets) and the network-layer payload that follows the header.
/// `None` when the frame is shorter than the header.
#[must_use]
pub fn sll_payload(data: &[u8]) -> Option<(u16, &[u8])> {
    // packet type (2), ARPHRD (2), address length (2), address (8), protocol (2)
    const PROTOCOL: usize = 14;
    const HEADER_LEN: usize = 16;
    let proto = data.get(PROTOCOL..HEADER_LEN)?;
    Some((
        u16::from_be_bytes([proto[0], proto[1]]),
        data.get(HEADER_LEN..)?,
    ))
}

/// Linux cooked capture v2 (`LINKTYPE_LINUX_SLL2`, 20-byte header): the protocol field (an
/// `EtherType` for ordinary packets) and the network-layer payload that follows the header.
/// `None` when the frame is shorter than the header.
#[must_use]
pub fn sll2_payload(data: &[u8]) -> Option<(u16, &[u8])> {
    // protocol (2), reserved (2), ifindex (4), ARPHRD (2), packet type (1), address length (1),
    // address (8)
    const PROTOCOL: usize = 0;
    const HEADER_LEN: usize = 20;
    let proto = data.get(PROTOCOL..PROTOCOL + 2)?;
    Some((
        u16::from_be_bytes([proto[0], proto[1]]),
        data.get(HEADER_LEN..)?,
    ))
}

/// For a cooked-capture link type, the protocol field and the network-layer payload
/// ([`sll_payload`] or [`sll2_payload`]); `None` for other link types or a short frame.
#[must_use]
pub fn cooked_payload(link: LinkType, data: &[u8]) -> Option<(u16, &[u8])> {
    match link {
        LinkType::LINUX_SLL => sll_payload(data),
        LinkType::LINUX_SLL2 => sll2_payload(data),
        _ => None,
    }
}

/// Why a capture could not be read. `Display` is one line: `<file>: <reason>`.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// Opening or reading failed.
    #[error("{}: {}", .path.display(), io_reason(.error))]
    Io { path: PathBuf, error: io::Error },
    /// The path names a directory.
    #[error("{}: is a directory", .path.display())]
    IsDirectory { path: PathBuf },
    /// The input has no bytes at all.
    #[error("{}: empty file", .path.display())]
    Empty { path: PathBuf },
    /// The first four bytes are no pcap or pcapng magic number.
    #[error("{}: not a pcap or pcapng file (magic 0x{magic:08x})", .path.display())]
    NotCapture { path: PathBuf, magic: u32 },
    /// Fewer than four bytes: no magic number to look at.
    #[error("{}: not a pcap or pcapng file (only {len} bytes)", .path.display())]
    TooShort { path: PathBuf, len: usize },
    /// The pcap global header or the first pcapng section header is cut short.
    #[error("{}: truncated {what} ({need} bytes needed, {have} present)", .path.display())]
    TruncatedHeader {
        path: PathBuf,
        what: &'static str,
        need: usize,
        have: usize,
    },
    /// The input ends inside the fixed header of a record or block.
    #[error("{}: truncated {what} header at byte {offset} (need {need} bytes, {left} left)", .path.display())]
    TruncatedRecordHeader {
        path: PathBuf,
        what: &'static str,
        offset: u64,
        need: usize,
        left: usize,
    },
    /// A record or block says it is longer than what is left of the input.
    #[error("{}: truncated {what} at byte {offset} ({what} says {says} bytes, {left} left)", .path.display())]
    TruncatedRecord {
        path: PathBuf,
        what: &'static str,
        offset: u64,
        says: u64,
        left: u64,
    },
    /// A record or block whose content makes no sense.
    #[error("{}: malformed {what} at byte {offset}: {reason}", .path.display())]
    Malformed {
        path: PathBuf,
        what: &'static str,
        offset: u64,
        reason: Cow<'static, str>,
    },
}

impl CaptureError {
    /// The file the error is about (`<stdin>` for standard input).
    #[must_use]
    pub fn path(&self) -> &Path {
        match self {
            Self::Io { path, .. }
            | Self::IsDirectory { path }
            | Self::Empty { path }
            | Self::NotCapture { path, .. }
            | Self::TooShort { path, .. }
            | Self::TruncatedHeader { path, .. }
            | Self::TruncatedRecordHeader { path, .. }
            | Self::TruncatedRecord { path, .. }
            | Self::Malformed { path, .. } => path,
        }
    }
}

/// `io::Error`'s message without the ` (os error N)` suffix.
fn io_reason(error: &io::Error) -> String {
    let text = error.to_string();
    match text.rfind(" (os error ") {
        Some(at) if text.ends_with(')') => text[..at].to_owned(),
        _ => text,
    }
}

fn pcap_error_reason(error: PcapError) -> Cow<'static, str> {
    match error {
        PcapError::InvalidField(reason) => Cow::Borrowed(reason),
        PcapError::IncompleteBuffer => Cow::Borrowed("incomplete data"),
        other => Cow::Owned(other.to_string()),
    }
}

/// The container format of a capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaptureFormat {
    /// Classic pcap; `nanosecond` tells the timestamp resolution.
    Pcap {
        nanosecond: bool,
        big_endian: bool,
        link: LinkType,
    },
    /// pcapng (link type and resolution are per interface).
    PcapNg,
}

/// A reusable input buffer over any byte stream.
struct Input {
    src: Box<dyn Read + Send>,
    buf: Vec<u8>,
    /// Start of the unconsumed bytes.
    pos: usize,
    /// End of the valid bytes.
    end: usize,
    /// Stream offset of `buf[0]`.
    base: u64,
    eof: bool,
}

impl Input {
    fn new(src: Box<dyn Read + Send>) -> Self {
        Input {
            src,
            buf: vec![0; BUF_SIZE],
            pos: 0,
            end: 0,
            base: 0,
            eof: false,
        }
    }

    /// Tries to have at least `need` unconsumed bytes in the buffer; returns how many there are
    /// (fewer only at the end of the input). `need` must be at most [`MAX_RECORD_LEN`].
    fn ensure(&mut self, need: usize) -> io::Result<usize> {
        if self.end - self.pos >= need || self.eof {
            return Ok(self.end - self.pos);
        }
        if self.pos + need > self.buf.len() {
            self.buf.copy_within(self.pos..self.end, 0);
            self.base += self.pos as u64;
            self.end -= self.pos;
            self.pos = 0;
            if need > self.buf.len() {
                self.buf.resize(need, 0);
            }
        }
        while self.end - self.pos < need {
            match self.src.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(n) => self.end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(self.end - self.pos)
    }

    fn avail(&self) -> &[u8] {
        &self.buf[self.pos..self.end]
    }

    fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.end);
    }

    /// Stream offset of the first unconsumed byte.
    fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }
}

fn read_u16(b: &[u8], at: usize, big: bool) -> Option<u16> {
    let bytes: [u8; 2] = b.get(at..at + 2)?.try_into().ok()?;
    Some(if big {
        u16::from_be_bytes(bytes)
    } else {
        u16::from_le_bytes(bytes)
    })
}

fn read_u32(b: &[u8], at: usize, big: bool) -> Option<u32> {
    let bytes: [u8; 4] = b.get(at..at + 4)?.try_into().ok()?;
    Some(if big {
        u32::from_be_bytes(bytes)
    } else {
        u32::from_le_bytes(bytes)
    })
}

/// Timestamp unit of a pcapng interface (`if_tsresol`).
#[derive(Debug, Clone, Copy)]
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
#[derive(Debug, Clone, Copy)]
struct Iface {
    link: LinkType,
    snaplen: u32,
    unit: TsUnit,
    /// `if_tsoffset`, in nanoseconds.
    offset_ns: i128,
}

impl Iface {
    fn from_idb(idb: &InterfaceDescriptionBlock<'_>) -> Self {
        let mut unit = TsUnit::Pow10(6);
        let mut offset_ns = 0i128;
        for opt in &idb.options {
            match opt {
                InterfaceDescriptionOption::IfTsResol(v) => unit = TsUnit::from_tsresol(*v),
                // The option is a signed 64-bit count of seconds; pcap-file hands it over unsigned.
                #[allow(clippy::cast_possible_wrap)]
                InterfaceDescriptionOption::IfTsOffset(secs) => {
                    offset_ns = i128::from(*secs as i64) * 1_000_000_000;
                }
                _ => {}
            }
        }
        Iface {
            link: LinkType(u32::from(idb.linktype)),
            snaplen: idb.snaplen,
            unit,
            offset_ns,
        }
    }

    fn time_ns(&self, ticks: u64) -> u64 {
        let ns = i128::try_from(self.unit.to_ns(ticks)).unwrap_or(i128::MAX) + self.offset_ns;
        u64::try_from(ns.max(0)).unwrap_or(u64::MAX)
    }
}

enum Format {
    Pcap {
        parser: PcapParser,
        big: bool,
        nanos: bool,
        link: LinkType,
    },
    PcapNg {
        parser: PcapNgParser,
        big: bool,
        ifaces: Vec<Iface>,
    },
}

/// The frame the reader stands on: where its bytes are in the buffer.
#[derive(Debug, Clone, Copy, Default)]
struct Current {
    number: u64,
    time_ns: u64,
    caplen: u32,
    orig_len: u32,
    link: u32,
    start: usize,
    len: usize,
}

/// Reads the frames of one pcap or pcapng file, or of standard input.
pub struct CaptureReader {
    path: PathBuf,
    input: Input,
    format: Format,
    cur: Current,
    done: bool,
    last_time_ns: u64,
}

impl fmt::Debug for CaptureReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CaptureReader")
            .field("path", &self.path)
            .field("format", &self.format())
            .field("frames_read", &self.cur.number)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl CaptureReader {
    /// Opens a capture file; `-` reads standard input.
    ///
    /// # Errors
    /// A missing or unreadable file, a directory, an empty file, or a file that is not pcap or
    /// pcapng (or whose header is cut short).
    pub fn open(path: &Path) -> Result<Self, CaptureError> {
        if path.as_os_str() == "-" {
            return Self::from_reader("<stdin>", io::stdin());
        }
        let io_err = |error| CaptureError::Io {
            path: path.to_owned(),
            error,
        };
        let meta = std::fs::metadata(path).map_err(io_err)?;
        if meta.is_dir() {
            return Err(CaptureError::IsDirectory {
                path: path.to_owned(),
            });
        }
        let file = File::open(path).map_err(io_err)?;
        Self::from_reader(path, file)
    }

    /// Reads a capture from any byte stream; `name` is used in error messages.
    ///
    /// # Errors
    /// As [`CaptureReader::open`], for the stream's first bytes.
    pub fn from_reader(
        name: impl Into<PathBuf>,
        src: impl Read + Send + 'static,
    ) -> Result<Self, CaptureError> {
        let path = name.into();
        let mut input = Input::new(Box::new(src));
        let have = input.ensure(4).map_err(|e| io_err(&path, e))?;
        if have == 0 {
            return Err(CaptureError::Empty { path });
        }
        let Some(magic) = read_u32(input.avail(), 0, true).filter(|_| have >= 4) else {
            return Err(CaptureError::TooShort { path, len: have });
        };
        let format = match magic {
            magic::PCAP_US_BE | magic::PCAP_US_LE | magic::PCAP_NS_BE | magic::PCAP_NS_LE => {
                open_pcap(&path, &mut input)?
            }
            magic::PCAPNG_SHB => open_pcapng(&path, &mut input)?,
            magic => return Err(CaptureError::NotCapture { path, magic }),
        };
        Ok(CaptureReader {
            path,
            input,
            format,
            cur: Current::default(),
            done: false,
            last_time_ns: 0,
        })
    }

    /// The name the reader was opened with (`<stdin>` for standard input).
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The container format.
    #[must_use]
    pub fn format(&self) -> CaptureFormat {
        match &self.format {
            Format::Pcap {
                big, nanos, link, ..
            } => CaptureFormat::Pcap {
                nanosecond: *nanos,
                big_endian: *big,
                link: *link,
            },
            Format::PcapNg { .. } => CaptureFormat::PcapNg,
        }
    }

    /// The next frame in file order, `None` at the end (or after an error).
    pub fn next_frame(&mut self) -> Option<Result<Frame<'_>, CaptureError>> {
        match self.advance()? {
            Ok(()) => Some(Ok(self.current())),
            Err(e) => Some(Err(e)),
        }
    }

    /// The frame the reader stands on (after `advance` returned `Ok`).
    fn current(&self) -> Frame<'_> {
        let c = &self.cur;
        Frame {
            number: c.number,
            time_ns: c.time_ns,
            caplen: c.caplen,
            orig_len: c.orig_len,
            link: LinkType(c.link),
            data: self
                .input
                .buf
                .get(c.start..c.start + c.len)
                .unwrap_or_default(),
        }
    }

    /// Moves to the next frame without borrowing it.
    fn advance(&mut self) -> Option<Result<(), CaptureError>> {
        if self.done {
            return None;
        }
        let step = match &mut self.format {
            Format::Pcap {
                parser,
                big,
                nanos,
                link,
            } => next_pcap(&mut self.input, parser, *big, *nanos, *link),
            Format::PcapNg {
                parser,
                big,
                ifaces,
            } => next_pcapng(&mut self.input, parser, big, ifaces, self.last_time_ns),
        };
        match step {
            Ok(Some(mut cur)) => {
                cur.number = self.cur.number + 1;
                self.last_time_ns = cur.time_ns;
                self.cur = cur;
                Some(Ok(()))
            }
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e.into_error(self.path.clone())))
            }
        }
    }
}

fn io_err(path: &Path, error: io::Error) -> CaptureError {
    CaptureError::Io {
        path: path.to_owned(),
        error,
    }
}

/// Parses the pcap global header (the magic number is known to be a pcap one).
fn open_pcap(path: &Path, input: &mut Input) -> Result<Format, CaptureError> {
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

/// Parses the first pcapng section header block (the block type is known to be SHB).
fn open_pcapng(path: &Path, input: &mut Input) -> Result<Format, CaptureError> {
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
        Some(magic::PCAPNG_BOM_BE) => true,
        Some(magic::PCAPNG_BOM_LE) => false,
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
    if !(28..=MAX_RECORD_LEN).contains(&len) || len % 4 != 0 {
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
    let parser = match PcapNgParser::new(input.avail()) {
        Ok((_, parser)) => parser,
        Err(e) => {
            return Err(CaptureError::Malformed {
                path: path.to_owned(),
                what,
                offset: 0,
                reason: pcap_error_reason(e),
            });
        }
    };
    input.consume(len);
    Ok(Format::PcapNg {
        parser,
        big,
        ifaces: Vec::new(),
    })
}

/// A [`CaptureError`] before the path is attached (keeps the hot path free of `PathBuf` moves).
enum StepError {
    Io(io::Error),
    RecordHeader {
        what: &'static str,
        offset: u64,
        need: usize,
        left: usize,
    },
    Record {
        what: &'static str,
        offset: u64,
        says: u64,
        left: u64,
    },
    Malformed {
        what: &'static str,
        offset: u64,
        reason: Cow<'static, str>,
    },
}

impl StepError {
    fn into_error(self, path: PathBuf) -> CaptureError {
        match self {
            StepError::Io(error) => CaptureError::Io { path, error },
            StepError::RecordHeader {
                what,
                offset,
                need,
                left,
            } => CaptureError::TruncatedRecordHeader {
                path,
                what,
                offset,
                need,
                left,
            },
            StepError::Record {
                what,
                offset,
                says,
                left,
            } => CaptureError::TruncatedRecord {
                path,
                what,
                offset,
                says,
                left,
            },
            StepError::Malformed {
                what,
                offset,
                reason,
            } => CaptureError::Malformed {
                path,
                what,
                offset,
                reason,
            },
        }
    }
}

impl From<io::Error> for StepError {
    fn from(e: io::Error) -> Self {
        StepError::Io(e)
    }
}

fn next_pcap(
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

fn next_pcapng(
    input: &mut Input,
    parser: &mut PcapNgParser,
    big: &mut bool,
    ifaces: &mut Vec<Iface>,
    last_time_ns: u64,
) -> Result<Option<Current>, StepError> {
    const BLOCK_HEADER_LEN: usize = 8;
    const BLOCK_MIN_LEN: usize = 12;
    loop {
        let offset = input.offset();
        let have = input.ensure(BLOCK_MIN_LEN)?;
        if have == 0 {
            return Ok(None);
        }
        let avail = input.avail();
        let block_type = read_u32(avail, 0, *big).unwrap_or(0);
        // A new section may switch the byte order: its length is read in the order its own
        // byte-order magic gives.
        let len_big = if block_type == block::SECTION_HEADER {
            match read_u32(avail, 8, true) {
                Some(magic::PCAPNG_BOM_BE) => true,
                Some(magic::PCAPNG_BOM_LE) => false,
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
        if len < BLOCK_MIN_LEN || len % 4 != 0 || len > MAX_RECORD_LEN {
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
        let block_type = match parser.next_raw_block(input.avail()) {
            Ok((_, raw)) => raw.type_,
            Err(e) => {
                return Err(StepError::Malformed {
                    what: "block",
                    offset,
                    reason: pcap_error_reason(e),
                });
            }
        };
        let body_start = input.pos + BLOCK_HEADER_LEN;
        let body = input
            .buf
            .get(body_start..input.pos + len - 4)
            .unwrap_or_default();
        let found = match block_type {
            block::SECTION_HEADER | block::INTERFACE_DESCRIPTION => {
                *big = parser.section().endianness == Endianness::Big;
                ifaces.clear();
                ifaces.extend(parser.interfaces().iter().map(Iface::from_idb));
                None
            }
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
            Some(Ok(cur)) => {
                input.consume(len);
                return Ok(Some(cur));
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

/// Several captures merged by timestamp, as mergecap does: at each step the earliest pending
/// frame, ties going to the file given first; frames are numbered in merged order. With one file
/// it is a thin wrapper around that file's [`CaptureReader`].
#[derive(Debug)]
pub struct MergedReader {
    readers: Vec<CaptureReader>,
    /// `(time, reader index)` of every reader that has a pending frame.
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    /// The reader whose frame was returned last; it is advanced at the next call.
    last: Option<usize>,
    number: u64,
    errors: VecDeque<CaptureError>,
}

impl MergedReader {
    /// Merges readers that were opened already (in the order given: that order breaks ties).
    #[must_use]
    pub fn new(readers: Vec<CaptureReader>) -> Self {
        let mut merged = MergedReader {
            heap: BinaryHeap::with_capacity(readers.len()),
            readers,
            last: None,
            number: 0,
            errors: VecDeque::new(),
        };
        if merged.readers.len() > 1 {
            for i in 0..merged.readers.len() {
                merged.refill(i);
            }
        }
        merged
    }

    fn refill(&mut self, i: usize) {
        let Some(reader) = self.readers.get_mut(i) else {
            return;
        };
        match reader.advance() {
            Some(Ok(())) => self.heap.push(Reverse((reader.cur.time_ns, i))),
            Some(Err(e)) => self.errors.push_back(e),
            None => {}
        }
    }

    /// The next frame in merged order, `None` when every input is exhausted. An error of one
    /// input is returned once; the other inputs go on.
    pub fn next_frame(&mut self) -> Option<Result<Frame<'_>, CaptureError>> {
        if self.readers.len() == 1 {
            self.last = Some(0);
            return self.readers[0].next_frame();
        }
        if let Some(i) = self.last.take() {
            self.refill(i);
        }
        if let Some(e) = self.errors.pop_front() {
            return Some(Err(e));
        }
        let Reverse((_, i)) = self.heap.pop()?;
        self.last = Some(i);
        self.number += 1;
        let number = self.number;
        let reader = self.readers.get(i)?;
        Some(Ok(Frame {
            number,
            ..reader.current()
        }))
    }

    /// Index (in the order opened) of the input the last returned frame came from.
    #[must_use]
    pub fn last_source(&self) -> Option<usize> {
        self.last
    }

    /// The inputs, in the order opened.
    #[must_use]
    pub fn readers(&self) -> &[CaptureReader] {
        &self.readers
    }
}

/// Opens every path (`-` = standard input) and merges them by time.
///
/// # Errors
/// The first path that cannot be opened, as [`CaptureReader::open`].
pub fn open_all(paths: &[PathBuf]) -> Result<MergedReader, CaptureError> {
    let readers = paths
        .iter()
        .map(|p| CaptureReader::open(p))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(MergedReader::new(readers))
}
