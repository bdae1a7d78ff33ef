//! Random access to the frames of one capture file (`rocescope inspect`).
//!
//! [`Indexer`] walks the file once with the streaming [`CaptureReader`] and records, for every
//! frame, where its bytes are ([`IndexEntry`]: file offset, stored length, lengths, time, link
//! type). [`FrameFile`] then reads any one frame with a seek and one `read_exact`, so memory
//! grows with the index, never with the file: the inspector keeps the entries in a
//! [`super::frame_index::FrameIndex`] (7 bytes a frame). Building the index in chunks lets a
//! caller show the first frames before the whole file has been read, and
//! [`Indexer::split_point`] lets a second indexer take the second half of a large file at the
//! same time.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use super::{CaptureError, CaptureReader, Frame, LinkType, MAX_RECORD_LEN, Resume};

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
    /// Where this indexer stops: where another indexer started ([`Indexer::stop_at`]).
    stop_at: Option<Resume>,
    /// The indexer stopped there, on a record boundary.
    reached: bool,
    /// The indexer read past it (a record spans it).
    passed: bool,
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
        let mut reader = CaptureReader::open(path)?;
        reader.read_in_large_units();
        Ok(Indexer {
            reader,
            done: false,
            stop_at: None,
            reached: false,
            passed: false,
        })
    }

    /// Opens a file for indexing from where [`Indexer::split_point`] said. Entries keep their
    /// offsets in the file.
    ///
    /// # Errors
    /// As [`Indexer::open`].
    pub fn open_at(path: &Path, from: &Resume) -> Result<Self, CaptureError> {
        let mut ix = Self::open(path)?;
        ix.reader.seek_record(from)?;
        Ok(ix)
    }

    /// Where a second indexer could start on a file of at least `min_size` bytes, so that two
    /// threads index its halves at once ([`CaptureReader::split_point`]). It is only a guess
    /// until this indexer, stopped there by [`Indexer::stop_at`], lands on it in the same
    /// state ([`Indexer::reached`]); if it does not, it reads on and the second index is not
    /// used.
    #[must_use]
    pub fn split_point(&self, min_size: u64) -> Option<Resume> {
        self.reader.split_point(min_size)
    }

    /// Stops this indexer where `at` takes over, if it lands there in the same state.
    pub fn stop_at(&mut self, at: &Resume) {
        self.stop_at = Some(at.clone());
    }

    /// The indexer stopped where [`Indexer::stop_at`] said (the entries up to it are complete).
    #[must_use]
    pub fn reached(&self) -> bool {
        self.reached
    }

    /// The indexer read past where it was to stop (no record starts there): it reads on to the
    /// end of the file.
    #[must_use]
    pub fn passed(&self) -> bool {
        self.passed
    }

    /// After [`Indexer::reached`]: reads on from there after all.
    pub fn resume(&mut self) {
        self.stop_at = None;
        self.reached = false;
        self.done = false;
    }

    /// Appends up to `max` entries to `out` (a list, or straight into a
    /// [`super::frame_index::FrameIndex`]); `Ok(false)` once the end of the file is reached.
    ///
    /// # Errors
    /// A record the reader cannot frame (the entries before it were appended; the indexer is
    /// finished after an error).
    pub fn next_chunk(
        &mut self,
        out: &mut impl Extend<IndexEntry>,
        max: usize,
    ) -> Result<bool, CaptureError> {
        if self.done {
            return Ok(false);
        }
        for _ in 0..max {
            if let Some(at) = &self.stop_at {
                if self.reader.resumes(at) {
                    self.reached = true;
                    self.done = true;
                    return Ok(false);
                }
                if self.reader.next_offset() >= at.at {
                    self.stop_at = None;
                    self.passed = true;
                }
            }
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
                    out.extend(Some(IndexEntry {
                        offset: self.reader.current_offset(),
                        time_ns,
                        len,
                        caplen,
                        orig_len,
                        link,
                    }));
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
pub(crate) mod test {
    use super::*;
    use std::io::Write;

    /// A classic pcap file (microseconds, little-endian) of `records` frames: frame `i` has
    /// `size(i)` bytes, filled by `fill`. `cut` bytes are left off the end.
    pub(crate) fn write_pcap(
        records: usize,
        size: impl Fn(usize) -> usize,
        fill: impl Fn(usize, &mut [u8]),
        cut: usize,
    ) -> tempfile::NamedTempFile {
        let mut bytes = Vec::new();
        // magic, version 2.4, zone, sigfigs, snaplen, Ethernet
        for word in [0xA1B2_C3D4u32, 0x0004_0002, 0, 0, 65_535, 1] {
            bytes.extend_from_slice(&word.to_le_bytes());
        }
        for i in 0..records {
            let mut data = vec![0u8; size(i)];
            fill(i, &mut data);
            let len = data.len() as u32;
            for word in [
                1_700_000_000 + (i / 1000) as u32,
                (i % 1000) as u32,
                len,
                len,
            ] {
                bytes.extend_from_slice(&word.to_le_bytes());
            }
            bytes.extend_from_slice(&data);
        }
        bytes.truncate(bytes.len() - cut);
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(&bytes).unwrap();
        file
    }

    /// A pcapng file (little-endian, one interface, microseconds) of `records` enhanced packet
    /// blocks as [`write_pcap`] fills them; when `idb_before` is given, a second interface (in
    /// nanoseconds) is described before that packet, and the packets from there are on it.
    pub(crate) fn write_pcapng(
        records: usize,
        size: impl Fn(usize) -> usize,
        fill: impl Fn(usize, &mut [u8]),
        idb_before: Option<usize>,
    ) -> tempfile::NamedTempFile {
        fn block(bytes: &mut Vec<u8>, kind: u32, body: &[u8]) {
            let len = 12 + body.len().div_ceil(4) * 4;
            bytes.extend_from_slice(&kind.to_le_bytes());
            bytes.extend_from_slice(&(len as u32).to_le_bytes());
            bytes.extend_from_slice(body);
            bytes.resize(bytes.len() + (4 - body.len() % 4) % 4, 0);
            bytes.extend_from_slice(&(len as u32).to_le_bytes());
        }
        let idb = [1u8, 0, 0, 0, 0, 0, 1, 0];
        let mut bytes = Vec::new();
        let shb = [
            0x4D, 0x3C, 0x2B, 0x1A, 1, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
        ];
        block(&mut bytes, 0x0A0D_0D0A, &shb);
        block(&mut bytes, 1, &idb);
        // the second interface counts in nanoseconds (if_tsresol 9), and the packets after it
        // are on it
        let idb_ns = [1u8, 0, 0, 0, 0, 0, 1, 0, 9, 0, 1, 0, 9, 0, 0, 0, 0, 0, 0, 0];
        let mut iface = 0u32;
        for i in 0..records {
            if idb_before == Some(i) {
                block(&mut bytes, 1, &idb_ns);
                iface = 1;
            }
            let mut data = vec![0u8; size(i)];
            fill(i, &mut data);
            let ts = 1_700_000_000_000_000u64 + i as u64;
            let mut body = Vec::new();
            for word in [
                iface,
                (ts >> 32) as u32,
                ts as u32,
                data.len() as u32,
                data.len() as u32,
            ] {
                body.extend_from_slice(&word.to_le_bytes());
            }
            body.extend_from_slice(&data);
            block(&mut bytes, 6, &body);
        }
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(&bytes).unwrap();
        file
    }

    /// Payloads that are chains of plausible pcap records themselves (100 bytes each): a
    /// second indexer finds its start inside one.
    pub(crate) fn fake_records(_: usize, data: &mut [u8]) {
        data.fill(0xFF);
        for fake in data.chunks_exact_mut(100) {
            for (at, word) in [1_700_000_000u32, 5, 84, 84].into_iter().enumerate() {
                fake[at * 4..at * 4 + 4].copy_from_slice(&word.to_le_bytes());
            }
        }
    }

    fn whole(ix: &mut Indexer) -> (Vec<IndexEntry>, Option<String>) {
        let mut entries = Vec::new();
        loop {
            match ix.next_chunk(&mut entries, 1000) {
                Ok(true) => {}
                Ok(false) => return (entries, None),
                Err(e) => return (entries, Some(e.to_string())),
            }
        }
    }

    /// Split at [`Indexer::split_point`], the first indexer stopped there and the second
    /// started there give, end to end, what one indexer gives; the first reaches the point
    /// (`reached`), or reads past it and on to the end when the point was not a record's start.
    fn check_split(file: &Path, expect_reached: bool) {
        let (all, end) = whole(&mut Indexer::open(file).unwrap());
        let mut first = Indexer::open(file).unwrap();
        let at = first.split_point(0).expect("a split point");
        first.stop_at(&at);
        let (mut entries, head_end) = whole(&mut first);
        assert_eq!(first.reached(), expect_reached, "{}", file.display());
        assert_eq!(first.passed(), !expect_reached);
        if first.reached() {
            assert_eq!(head_end, None);
            let (rest, rest_end) = whole(&mut Indexer::open_at(file, &at).unwrap());
            entries.extend(rest);
            assert_eq!(rest_end, end);
        } else {
            assert_eq!(head_end, end);
        }
        assert_eq!(entries, all);
    }

    #[test]
    fn split_indexes_join_into_the_whole_index() {
        let sizes = |i: usize| 60 + (i * 37) % 1400;
        let plain = write_pcap(3000, sizes, |i, d| d.fill(i as u8), 0);
        check_split(plain.path(), true);
        // the file ends inside its last record: the second indexer ends in the same error
        let cut = write_pcap(3000, sizes, |i, d| d.fill(i as u8), 10);
        check_split(cut.path(), true);
        // the middle is in a payload of fake records: the first indexer reads on
        let fakes = write_pcap(333, |_| 4000, fake_records, 0);
        check_split(fakes.path(), false);
        // pcapng: the same, and a second interface described before the middle (the state
        // the second indexer would start in is not the first's there: it reads on)
        let ng = write_pcapng(3000, sizes, |i, d| d.fill(i as u8), None);
        check_split(ng.path(), true);
        let ng_cut = write_pcapng(3000, sizes, |i, d| d.fill(i as u8), None);
        let len = ng_cut.as_file().metadata().unwrap().len();
        ng_cut.as_file().set_len(len - 10).unwrap();
        check_split(ng_cut.path(), true);
        let ng_idb = write_pcapng(3000, sizes, |i, d| d.fill(i as u8), Some(1000));
        check_split(ng_idb.path(), false);
        // no split point in a file below the size asked
        let ix = Indexer::open(plain.path()).unwrap();
        assert!(ix.split_point(u64::MAX).is_none());
    }

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
