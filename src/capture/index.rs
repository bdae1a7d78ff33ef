//! Random access to the frames of one capture file (`rocescope inspect`).
//!
//! [`Indexer`] walks the file once with the streaming [`CaptureReader`] and records, for every
//! frame, where its bytes are ([`IndexEntry`]: file offset, stored length, lengths, time, link
//! type). [`FrameFile`] then reads any one frame with a seek and one `read_exact`, so memory
//! grows with the index, never with the file: the inspector keeps the entries in a
//! [`super::frame_index::FrameIndex`] (12 bytes a frame). Building the index in chunks lets a
//! caller show the first frames before the whole file has been read.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use super::{CaptureError, CaptureReader, Frame, LinkType, MAX_RECORD_LEN};

/// Where one frame is in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexEntry {
    /// File offset of the first byte of the frame.
    pub offset: u64,
    pub time_ns: u64,
    /// Bytes stored in the file (what [`FrameFile::read`] reads).
    pub len: u32,
    pub caplen: u32,
    pub orig_len: u32,
    pub link: LinkType,
}

impl IndexEntry {
    /// The frame these bytes are, numbered `number` (1-based).
    #[must_use]
    pub fn frame<'a>(&self, number: u64, data: &'a [u8]) -> Frame<'a> {
        Frame {
            number,
            time_ns: self.time_ns,
            caplen: self.caplen,
            orig_len: self.orig_len,
            link: self.link,
            input: 0,
            data,
        }
    }
}

impl CaptureReader {
    /// Stream offset of the data of the frame the reader stands on.
    fn current_offset(&self) -> u64 {
        self.input.base + self.cur.start as u64
    }
}

/// Builds the frame index of one capture file, a chunk at a time.
#[derive(Debug)]
pub struct Indexer {
    reader: CaptureReader,
    done: bool,
}

impl Indexer {
    /// Opens `path` for indexing (standard input cannot be indexed).
    ///
    /// # Errors
    /// As [`CaptureReader::open`]; `-` is refused as not seekable.
    pub fn open(path: &Path) -> Result<Self, CaptureError> {
        if path.as_os_str() == "-" {
            return Err(CaptureError::Io {
                path: path.to_owned(),
                error: io::Error::new(
                    io::ErrorKind::Unsupported,
                    "standard input cannot be browsed: write it to a file first",
                ),
            });
        }
        Ok(Indexer {
            reader: CaptureReader::open(path)?,
            done: false,
        })
    }

    /// Appends up to `max` entries to `out`; `Ok(false)` once the end of the file is reached.
    ///
    /// # Errors
    /// A record the reader cannot frame (the entries before it were appended; the indexer is
    /// finished after an error).
    pub fn next_chunk(
        &mut self,
        out: &mut Vec<IndexEntry>,
        max: usize,
    ) -> Result<bool, CaptureError> {
        if self.done {
            return Ok(false);
        }
        for _ in 0..max {
            match self.reader.next_frame() {
                None => {
                    self.done = true;
                    return Ok(false);
                }
                Some(Err(e)) => {
                    self.done = true;
                    return Err(e);
                }
                Some(Ok(f)) => {
                    let (time_ns, caplen, orig_len, link) =
                        (f.time_ns, f.caplen, f.orig_len, f.link);
                    let len = u32::try_from(f.data.len()).unwrap_or(u32::MAX);
                    out.push(IndexEntry {
                        offset: self.reader.current_offset(),
                        time_ns,
                        len,
                        caplen,
                        orig_len,
                        link,
                    });
                }
            }
        }
        Ok(true)
    }
}

/// Reads single frames of an indexed capture file.
#[derive(Debug)]
pub struct FrameFile {
    file: File,
}

impl FrameFile {
    /// Opens the file for reading.
    ///
    /// # Errors
    /// Those of [`File::open`].
    pub fn open(path: &Path) -> io::Result<Self> {
        Ok(FrameFile {
            file: File::open(path)?,
        })
    }

    /// Reads the bytes of `entry` into `buf` (replacing its contents). Takes `&self`: reading
    /// moves only the shared file cursor.
    ///
    /// # Errors
    /// An I/O error, or an entry longer than [`MAX_RECORD_LEN`].
    pub fn read(&self, entry: &IndexEntry, buf: &mut Vec<u8>) -> io::Result<()> {
        let len = entry.len as usize;
        if len > MAX_RECORD_LEN {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "frame longer than the largest record accepted",
            ));
        }
        buf.clear();
        buf.resize(len, 0);
        let mut f = &self.file;
        f.seek(SeekFrom::Start(entry.offset))?;
        f.read_exact(buf)
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn index_matches_stream() {
        let path = Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/captures/read_heavy.pcap"
        ));
        let mut ix = Indexer::open(path).unwrap();
        let mut entries = Vec::new();
        while ix.next_chunk(&mut entries, 7).unwrap() {}
        let file = FrameFile::open(path).unwrap();
        let mut reader = CaptureReader::open(path).unwrap();
        let mut buf = Vec::new();
        let mut n = 0;
        while let Some(f) = reader.next_frame() {
            let f = f.unwrap();
            let e = &entries[n];
            file.read(e, &mut buf).unwrap();
            assert_eq!(buf, f.data);
            assert_eq!(e.time_ns, f.time_ns);
            n += 1;
        }
        assert_eq!(n, entries.len());
        assert!(n > 0);
    }
}
