//! Capture file input: pcap and pcapng, one file, standard input or several files merged by time.
//!
//! The readers are *lending* iterators: [`CaptureReader::next_frame`] returns a [`Frame`] that
//! borrows the reader's internal buffer until the next call. Nothing is allocated per frame; the
//! input is read in large chunks (1 MiB) into one reusable buffer ([`input`]), so captures larger
//! than RAM and pipes (`-` = standard input) work the same way.
//!
//! - [`pcap`]: the classic format's global header and records;
//! - [`pcapng`]: sections, interfaces and packet blocks;
//! - [`merge`]: several captures merged by timestamp ([`MergedReader`]);
//! - [`index`]: the inspector's frame index (file offsets, for random access).
//!
//! Errors are [`CaptureError`]s whose `Display` is one line naming the file and the reason. After a
//! reader has returned an error it is finished: the next call returns `None`. Frames before the
//! error have been delivered. Unknown pcapng block types are skipped; unknown link types are not an
//! error (the frame carries its [`LinkType`] and the dissector reports it).

pub mod index;
mod input;
pub mod merge;
mod pcap;
mod pcapng;

use std::borrow::Cow;
use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use pcap_file::PcapError;
use pcap_file::pcap::PcapParser;
use pcap_file::pcapng::PcapNgParser;
use rocescope_dissectors::{sll, sll2};

use self::input::{Input, read_u32};
pub use self::merge::MergedReader;
use self::pcapng::Iface;
pub use crate::frame::{Frame, LinkType};

/// Size of the read buffer (and the unit of each `read` call on the input).
const BUF_SIZE: usize = 1 << 20;

/// Largest pcap record or pcapng block accepted. Anything larger is taken as corruption rather
/// than a reason to allocate that much.
pub const MAX_RECORD_LEN: usize = 64 << 20;

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

/// Linux cooked capture v1 (`LINKTYPE_LINUX_SLL`, 16-byte header): the protocol field (an
/// `EtherType` for ordinary packets) and the network-layer payload that follows the header.
/// `None` when the frame is shorter than the header. (The dissector reads the header itself;
/// this is for callers that only want the payload.)
#[must_use]
pub fn sll_payload(data: &[u8]) -> Option<(u16, &[u8])> {
    let header = sll::Header::new_checked(data).ok()?;
    Some((header.protocol().0, data.get(sll::HEADER_LEN..)?))
}

/// Linux cooked capture v2 (`LINKTYPE_LINUX_SLL2`, 20-byte header): the protocol field (an
/// `EtherType` for ordinary packets) and the network-layer payload that follows the header.
/// `None` when the frame is shorter than the header.
#[must_use]
pub fn sll2_payload(data: &[u8]) -> Option<(u16, &[u8])> {
    let header = sll2::Header::new_checked(data).ok()?;
    Some((header.protocol().0, data.get(sll2::HEADER_LEN..)?))
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
    /// Size of the file, `None` for standard input or another stream.
    size: Option<u64>,
    first_time_ns: Option<u64>,
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
        let mut reader = Self::from_reader(path, file)?;
        reader.size = Some(meta.len());
        Ok(reader)
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
                pcap::open_pcap(&path, &mut input)?
            }
            magic::PCAPNG_SHB => pcapng::open_pcapng(&path, &mut input)?,
            magic => return Err(CaptureError::NotCapture { path, magic }),
        };
        Ok(CaptureReader {
            path,
            input,
            format,
            cur: Current::default(),
            done: false,
            last_time_ns: 0,
            size: None,
            first_time_ns: None,
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

    /// Size of the file in bytes; `None` for standard input and other streams.
    #[must_use]
    pub fn size_hint(&self) -> Option<u64> {
        self.size
    }

    /// Time of the file's first frame, once read.
    #[must_use]
    pub fn first_time_ns(&self) -> Option<u64> {
        self.first_time_ns
    }

    /// The frame the reader stands on (after [`advance`](Self::advance) returned `Ok`).
    #[must_use]
    pub fn current(&self) -> Frame<'_> {
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
    pub fn advance(&mut self) -> Option<Result<(), CaptureError>> {
        if self.done {
            return None;
        }
        let step = match &mut self.format {
            Format::Pcap {
                parser,
                big,
                nanos,
                link,
            } => pcap::next_pcap(&mut self.input, parser, *big, *nanos, *link),
            Format::PcapNg {
                parser,
                big,
                ifaces,
            } => pcapng::next_pcapng(&mut self.input, parser, big, ifaces, self.last_time_ns),
        };
        match step {
            Ok(Some(mut cur)) => {
                cur.number = self.cur.number + 1;
                self.last_time_ns = cur.time_ns;
                self.first_time_ns.get_or_insert(cur.time_ns);
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
