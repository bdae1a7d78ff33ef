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

mod error;
pub mod frame_index;
pub mod index;
mod input;
pub mod merge;
mod pcap;
mod pcapng;

use std::fmt;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rocescope_dissectors::{sll, sll2};

pub use self::error::CaptureError;
use self::error::io_err;
pub use self::input::MAX_RECORD_LEN;
use self::input::{Current, Input, read_u32};
pub use self::merge::MergedReader;
pub use crate::frame::{Frame, LinkType};

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

/// Bytes read at the middle of a file to find a record starting there.
const SYNC_WINDOW: usize = 1 << 20;
/// Consecutive plausible records (pcapng: blocks) that make a position a record's start
/// (fewer when they end exactly at the end of the file, or run past the window after
/// [`SYNC_MIN`]).
const SYNC_RECORDS: usize = 32;
const SYNC_MIN: usize = 4;

/// Where a second reader takes over a file: [`CaptureReader::split_point`].
#[derive(Debug, Clone)]
pub struct Resume {
    /// The offset of the record or block it starts at.
    pub at: u64,
    format: Format,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Format {
    Pcap(pcap::Pcap),
    PcapNg(pcapng::PcapNg),
}

/// Where a frame's bytes are in a reader's buffer, which can be held while the reader moves on.
#[derive(Debug, Clone, Copy)]
pub struct SharedFrame<'a> {
    pub buf: &'a Arc<Vec<u8>>,
    pub start: usize,
    pub end: usize,
}

/// Reads the frames of one pcap or pcapng file, or of standard input.
// Aligned to its own cache lines, as `MergedReader` is (it is written for every frame).
#[repr(align(128))]
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
        // A FIFO or a device has no size to read up to (and reports 0).
        reader.size = meta.is_file().then_some(meta.len());
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
            m if pcap::MAGICS.contains(&m) => Format::Pcap(pcap::open(&path, &mut input)?),
            pcapng::MAGIC => Format::PcapNg(pcapng::open(&path, &mut input)?),
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
            Format::Pcap(p) => CaptureFormat::Pcap {
                nanosecond: p.nanos,
                big_endian: p.big,
                link: p.link,
            },
            Format::PcapNg(_) => CaptureFormat::PcapNg,
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
    #[inline]
    pub fn current(&self) -> Frame<'_> {
        let c = &self.cur;
        Frame {
            number: c.number,
            time_ns: c.time_ns,
            caplen: c.caplen,
            orig_len: c.orig_len,
            link: LinkType(c.link),
            input: 0,
            data: self
                .input
                .buf
                .get(c.start..c.start + c.len)
                .unwrap_or_default(),
        }
    }

    /// The frame [`current`](Self::current) lends, as a range of the reader's buffer that
    /// may be held past the next move (the reader then reads on into another buffer).
    #[must_use]
    pub fn current_shared(&self) -> SharedFrame<'_> {
        SharedFrame {
            buf: self.input.shared(),
            start: self.cur.start,
            end: self.cur.start + self.cur.len,
        }
    }

    /// Gives back a buffer [`current_shared`](Self::current_shared) lent.
    pub fn recycle(&mut self, buf: Arc<Vec<u8>>) {
        self.input.recycle(buf);
    }

    /// Reads 1 MiB at a time (the inspector's indexers: fewer calls, nothing lent).
    pub(crate) fn read_in_large_units(&mut self) {
        self.input.read_in_large_units();
    }

    /// Buffers kept for reading on while the current one is lent.
    pub(crate) fn spare_buffers(&self) -> usize {
        self.input.spare_buffers()
    }

    /// Moves to the next frame without borrowing it.
    pub fn advance(&mut self) -> Option<Result<(), CaptureError>> {
        if self.done {
            return None;
        }
        let number = self.cur.number;
        let step = match &mut self.format {
            Format::Pcap(p) => p.next(&mut self.input, &mut self.cur),
            Format::PcapNg(p) => p.next(&mut self.input, self.last_time_ns, &mut self.cur),
        };
        match step {
            Ok(true) => {
                self.cur.number = number + 1;
                self.last_time_ns = self.cur.time_ns;
                self.first_time_ns.get_or_insert(self.cur.time_ns);
                Some(Ok(()))
            }
            Ok(false) => {
                self.done = true;
                // Cut at a record boundary, a shrunk file would end as if complete.
                self.shrunk().map(Err)
            }
            Err(e) => {
                self.done = true;
                let error = e.into_error(self.path.clone());
                Some(Err(self.shrunk().unwrap_or(error)))
            }
        }
    }
}

impl CaptureReader {
    /// Where a second reader could take over a file of at least `min_size` bytes: near the
    /// middle, where a chain of plausible records (pcapng: blocks) starts, with the format's
    /// state as of the file's first frame (a pcapng file's byte order and interfaces). It is a
    /// guess: payload bytes can look like records, and a pcapng file can describe more
    /// interfaces on the way. A reader that reaches it in the same state
    /// ([`CaptureReader::resumes`]) reads on exactly as the second reader does.
    pub(crate) fn split_point(&self, min_size: u64) -> Option<Resume> {
        let size = self.size.filter(|&s| s >= min_size.max(2))?;
        let start = size / 2;
        let mut file = File::open(&self.path).ok()?;
        file.seek(SeekFrom::Start(start)).ok()?;
        let mut window = Vec::with_capacity(SYNC_WINDOW);
        file.take(SYNC_WINDOW as u64)
            .read_to_end(&mut window)
            .ok()?;
        let left = size - start;
        let at = match &self.format {
            Format::Pcap(p) => p.record_start(&window, left)?,
            Format::PcapNg(ng) => ng.block_start(&window, start, left)?,
        };
        Self::resume_point(&self.path, start + at as u64)
    }

    /// A second reader's state at `at`: the format's as of the file's first frame.
    fn resume_point(path: &Path, at: u64) -> Option<Resume> {
        let mut reader = Self::open(path).ok()?;
        reader.size?;
        reader.advance()?.ok()?;
        Some(Resume {
            at,
            format: reader.format,
        })
    }

    /// Whether this reader stands where `resume` takes over, in the same state.
    pub(crate) fn resumes(&self, resume: &Resume) -> bool {
        self.next_offset() == resume.at && self.format == resume.format
    }

    /// Continues the file from `resume` (see [`index::Indexer::open_at`]). Frames are
    /// numbered from 1 again.
    ///
    /// # Errors
    /// Standard input (it cannot be entered in the middle), or the file can no longer be
    /// opened.
    pub(crate) fn seek_record(&mut self, resume: &Resume) -> Result<(), CaptureError> {
        let io_err = |error| CaptureError::Io {
            path: self.path.clone(),
            error,
        };
        if self.size.is_none() {
            return Err(io_err(io::Error::new(
                io::ErrorKind::Unsupported,
                "a stream cannot be read from the middle",
            )));
        }
        let mut file = File::open(&self.path).map_err(io_err)?;
        file.seek(SeekFrom::Start(resume.at)).map_err(io_err)?;
        self.input.restart(Box::new(file), resume.at);
        self.format = resume.format.clone();
        self.cur = Current::default();
        self.done = false;
        Ok(())
    }

    /// Stream offset where the next record starts.
    pub(crate) fn next_offset(&self) -> u64 {
        self.input.offset()
    }

    /// At the end of the input or after a read error, before all the bytes the file had when it
    /// was opened were read: a file now shorter (truncated or rotated under the reader) is the
    /// cause worth naming. (One `stat`, once per file.)
    fn shrunk(&self) -> Option<CaptureError> {
        let was = self.size?;
        if self.input.offset() >= was {
            return None; // all of it was read (a file that grew is fine)
        }
        let now = std::fs::metadata(&self.path).ok()?.len();
        (now < was).then(|| CaptureError::Shrunk {
            path: self.path.clone(),
            was,
            now,
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The readers the reading thread writes for every frame keep cache lines of their own
    /// (false sharing with the consuming thread once cost the replay a third of its time);
    /// an attribute that slid onto another item loses that without any other sign.
    #[test]
    fn readers_sit_on_cache_lines_of_their_own() {
        assert_eq!(std::mem::align_of::<CaptureReader>(), 128);
        assert_eq!(std::mem::align_of::<MergedReader>(), 128);
    }
}
