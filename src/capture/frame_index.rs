//! [`FrameIndex`]: the inspector's index of every frame of a capture in 7 bytes a frame, not
//! the 32 of an [`IndexEntry`] (a 2 GB capture of small frames holds 10 million of them).
//!
//! Frames are grouped in blocks of [`BLOCK`]; a block holds its first frame's offset, time
//! and link type, and each frame its time from those (`u32`), its stored length (`u16`) and
//! the bytes between the end of the frame before it and its start (`u8`: a pcap record
//! header, a pcapng block's header and padding). A frame's offset is its block's plus the
//! lengths and gaps before it in the block (at most 255 of each to add, for a frame shown on
//! screen). A frame that does not fit (more than 4.29 s from its block's first frame, time
//! going backwards, another link type, 65,536 bytes or more, a gap of 256 or more, a
//! captured length other than its stored one) is kept whole on the side; its time slot says
//! so. Original lengths are kept as the difference from the stored one (2 bytes a frame),
//! from the first frame cut short on (a capture with a snap length), and on the side beyond
//! 65,534.

use super::LinkType;
use super::index::IndexEntry;

/// Frames a block.
const BLOCK: usize = 256;
/// A frame's time slot when the frame is kept whole on the side.
const ASIDE: u32 = u32::MAX;
/// A frame's original-length slot when its original length is kept on the side.
const LONG: u16 = u16::MAX;

#[derive(Debug, Clone, Copy)]
struct Block {
    offset: u64,
    time_ns: u64,
    link: LinkType,
}

/// The index of a capture's frames, in file order: pieces, each on its own block grid, so that
/// an index built on another thread (a chunk of the indexer's, the second indexer's half of the
/// file) is appended by moving it, not by copying it frame by frame.
#[derive(Debug, Default)]
pub struct FrameIndex {
    pieces: Vec<Piece>,
    /// The first frame of each piece.
    starts: Vec<usize>,
}

impl FrameIndex {
    #[must_use]
    pub fn new() -> Self {
        FrameIndex::default()
    }

    /// An empty index with room for `frames` frames in its first piece.
    #[must_use]
    pub fn with_capacity(frames: usize) -> Self {
        FrameIndex {
            pieces: vec![Piece::with_capacity(frames)],
            starts: vec![0],
        }
    }

    /// Frames indexed.
    #[must_use]
    pub fn len(&self) -> usize {
        match (self.starts.last(), self.pieces.last()) {
            (Some(start), Some(last)) => start + last.len(),
            _ => 0,
        }
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends the next frame's entry.
    pub fn push(&mut self, e: &IndexEntry) {
        if self.pieces.is_empty() {
            self.pieces.push(Piece::default());
            self.starts.push(0);
        }
        if let Some(last) = self.pieces.last_mut() {
            last.push(e);
        }
    }

    /// Appends every entry of `other`, in order, by moving its pieces.
    pub fn append(&mut self, other: FrameIndex) {
        for piece in other.pieces {
            if piece.len() == 0 {
                continue;
            }
            // an empty last piece (`with_capacity`) would no longer be the last
            if self.pieces.last().is_some_and(|p| p.len() == 0) {
                self.pieces.pop();
                self.starts.pop();
            }
            self.starts.push(self.len());
            self.pieces.push(piece);
        }
    }

    /// The entry of the frame at `i` (0-based).
    #[must_use]
    pub fn get(&self, i: usize) -> Option<IndexEntry> {
        if i >= self.len() {
            return None;
        }
        let p = self
            .starts
            .partition_point(|&start| start <= i)
            .checked_sub(1)?;
        self.pieces.get(p)?.get(i - self.starts.get(p)?)
    }

    /// The first frame's time.
    #[must_use]
    pub fn first_time_ns(&self) -> Option<u64> {
        self.get(0).map(|e| e.time_ns)
    }
}

/// Appends entries, in order.
impl Extend<IndexEntry> for FrameIndex {
    fn extend<I: IntoIterator<Item = IndexEntry>>(&mut self, entries: I) {
        for e in entries {
            self.push(&e);
        }
    }
}

impl<'a> Extend<&'a IndexEntry> for FrameIndex {
    fn extend<I: IntoIterator<Item = &'a IndexEntry>>(&mut self, entries: I) {
        for e in entries {
            self.push(e);
        }
    }
}

/// Frames indexed on one block grid.
#[derive(Debug, Default)]
struct Piece {
    blocks: Vec<Block>,
    /// Time from the block's first frame ([`ASIDE`]: the frame is in `aside`).
    time: Vec<u32>,
    /// Bytes stored (the captured length); 0 for a frame kept aside.
    len: Vec<u16>,
    /// Bytes from the end of the frame before (in the block) to the start of this one.
    gap: Vec<u8>,
    /// Original length minus stored length, once a frame was cut short ([`LONG`]: in
    /// `long`); empty while none was.
    extra: Vec<u16>,
    /// Frames kept whole, by position (ascending).
    aside: Vec<(usize, IndexEntry)>,
    /// Original lengths too far above the stored one, by position (ascending).
    long: Vec<(usize, u32)>,
    /// Where the last frame pushed ends in the file.
    last_end: u64,
}

impl Piece {
    fn with_capacity(frames: usize) -> Self {
        Piece {
            blocks: Vec::with_capacity(frames.div_ceil(BLOCK)),
            time: Vec::with_capacity(frames),
            len: Vec::with_capacity(frames),
            gap: Vec::with_capacity(frames),
            ..Piece::default()
        }
    }

    fn len(&self) -> usize {
        self.time.len()
    }

    fn push(&mut self, e: &IndexEntry) {
        let i = self.len();
        let first = i.is_multiple_of(BLOCK);
        if first {
            self.blocks.push(Block {
                offset: e.offset,
                time_ns: e.time_ns,
                link: e.link,
            });
        }
        let Some(b) = self.blocks.last().copied() else {
            return;
        };
        let gap = if first {
            Some(0)
        } else {
            e.offset
                .checked_sub(self.last_end)
                .and_then(|g| u8::try_from(g).ok())
        };
        let time = e.time_ns.checked_sub(b.time_ns).map(u32::try_from);
        let len = u16::try_from(e.len).ok();
        match (gap, time, len) {
            (Some(gap), Some(Ok(t)), Some(len))
                if t != ASIDE && e.link == b.link && e.caplen == e.len =>
            {
                self.time.push(t);
                self.len.push(len);
                self.gap.push(gap);
            }
            _ => {
                self.time.push(ASIDE);
                self.len.push(0);
                self.gap.push(0);
                self.aside.push((i, *e));
            }
        }
        self.last_end = e.offset.saturating_add(u64::from(e.len));
        let extra = e.orig_len.saturating_sub(e.len);
        // from the first frame cut short on (it may be the first), every frame has its slot
        if extra > 0 || !self.extra.is_empty() {
            self.extra.resize(i, 0);
            match u16::try_from(extra) {
                Ok(x) if x != LONG => self.extra.push(x),
                _ => {
                    self.extra.push(LONG);
                    self.long.push((i, e.orig_len));
                }
            }
        }
    }

    fn aside(&self, i: usize) -> Option<IndexEntry> {
        let at = self.aside.binary_search_by_key(&i, |&(j, _)| j).ok()?;
        self.aside.get(at).map(|&(_, e)| e)
    }

    /// Where frame `i` (not aside) starts: its block's offset, or the end of the last frame
    /// kept aside before it in the block, plus the lengths and gaps in between.
    fn offset(&self, i: usize, block: &Block) -> Option<u64> {
        let start = i - i % BLOCK;
        let mut after = 0u64;
        let mut j = i;
        while j > start {
            after += u64::from(*self.gap.get(j)?);
            j -= 1;
            if *self.time.get(j)? == ASIDE {
                let e = self.aside(j)?;
                return Some(e.offset + u64::from(e.len) + after);
            }
            after += u64::from(*self.len.get(j)?);
        }
        Some(block.offset + after)
    }

    fn get(&self, i: usize) -> Option<IndexEntry> {
        let time = *self.time.get(i)?;
        if time == ASIDE {
            return self.aside(i);
        }
        let len = u32::from(*self.len.get(i)?);
        let b = self.blocks.get(i / BLOCK)?;
        let orig_len = match self.extra.get(i) {
            None | Some(0) => len,
            Some(&LONG) => {
                let at = self.long.binary_search_by_key(&i, |&(j, _)| j).ok()?;
                self.long.get(at)?.1
            }
            Some(&x) => len.saturating_add(u32::from(x)),
        };
        Some(IndexEntry {
            offset: self.offset(i, b)?,
            time_ns: b.time_ns + u64::from(time),
            len,
            caplen: len,
            orig_len,
            link: b.link,
        })
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn entry(i: u64) -> IndexEntry {
        IndexEntry {
            offset: 24 + i * 1100,
            time_ns: 1_700_000_000_000_000_000 + i * 1000,
            len: 1000 + (i % 100) as u32,
            caplen: 1000 + (i % 100) as u32,
            orig_len: 1000 + (i % 100) as u32,
            link: LinkType::ETHERNET,
        }
    }

    /// 2,000 entries with every odd case.
    fn odd_entries() -> Vec<IndexEntry> {
        let mut all: Vec<IndexEntry> = (0..2000).map(entry).collect();
        // the odd ones: time backwards, a long pause, another link type, a 5 GiB jump, a
        // captured length other than the stored one, cut frames (a little, a lot)
        all[7].time_ns -= 5_000;
        all[300].time_ns += 10_000_000_000;
        all[301].time_ns = all[300].time_ns + 1;
        all[600].link = LinkType(105);
        all[700].offset += 5 << 30;
        for e in &mut all[701..] {
            e.offset += 5 << 30;
        }
        all[900].caplen += 1;
        all[1000].orig_len += 40;
        all[1001].orig_len += 70_000;
        // 300 bytes between two frames (a pcapng block between them), a frame of 70,000
        // bytes, one of 65,534 and one of 65,535
        for e in &mut all[1200..] {
            e.offset += 300;
        }
        // and 255 bytes before frame 1300 (1 before it + 254): the largest gap that fits
        for e in &mut all[1300..] {
            e.offset += 254;
        }
        for (at, len) in [(1500, 70_000), (1600, 65_534), (1700, 65_535)] {
            all[at].len = len;
            all[at].caplen = len;
            all[at].orig_len = len;
            for e in &mut all[at + 1..] {
                e.offset += u64::from(len) - 1090; // 10 bytes after it
            }
        }
        all
    }

    fn assert_gives_back(index: &FrameIndex, all: &[IndexEntry], what: &str) {
        assert_eq!(index.len(), all.len(), "{what}");
        for (i, e) in all.iter().enumerate() {
            assert_eq!(index.get(i), Some(*e), "{what}: frame {i}");
        }
        assert_eq!(index.get(all.len()), None, "{what}");
    }

    #[test]
    fn gives_back_every_entry() {
        let all = odd_entries();
        let mut index = FrameIndex::new();
        index.extend(&all[..999]);
        assert!(index.pieces[0].extra.is_empty(), "no frame was cut yet");
        index.extend(&all[999..]);
        assert_eq!(index.len(), all.len());
        for (i, e) in all.iter().enumerate() {
            assert_eq!(index.get(i), Some(*e), "frame {i}");
        }
        assert_eq!(index.get(all.len()), None);
        assert_eq!(index.first_time_ns(), Some(all[0].time_ns));
        // 300 and 301 (too far in time), 600 (link type), 700 (5 GiB from the frame before),
        // 900 (captured length), 1200 (gap), 1500 (length; 65,535 still fits)
        let aside: Vec<usize> = index.pieces[0].aside.iter().map(|&(i, _)| i).collect();
        assert_eq!(aside, [300, 301, 600, 700, 900, 1200, 1500]);
    }

    /// An index built in pieces, on and off the block grid, and appended gives back what one
    /// built in one go does, and grows on by `push` after it.
    #[test]
    fn appended_pieces_give_back_every_entry() {
        let all = odd_entries();
        let cuts: [&[usize]; 6] = [
            &[0],
            &[1000],
            &[512],
            &[1, 255, 257],
            &[300, 999, 1001, 1700],
            &[2000],
        ];
        for cut in cuts {
            let mut index = FrameIndex::new();
            let mut from = 0;
            for &to in cut.iter().chain([&1990]) {
                let mut piece = FrameIndex::new();
                piece.extend(&all[from..to.max(from)]);
                index.append(piece);
                from = to.max(from);
            }
            index.extend(&all[from..]);
            assert_gives_back(&index, &all, &format!("cut at {cut:?}"));
        }
        // a piece that was itself made of pieces
        let (mut inner, mut tail) = (FrameIndex::new(), FrameIndex::new());
        inner.extend(&all[..100]);
        tail.extend(&all[100..300]);
        inner.append(tail);
        let mut index = FrameIndex::new();
        index.extend(&all[..0]);
        let mut head = FrameIndex::new();
        head.extend(&all[..0]);
        index.append(head);
        let mut rest = FrameIndex::new();
        rest.extend(&all[300..]);
        index.append(inner);
        index.append(rest);
        assert_gives_back(&index, &all, "nested");
        assert_eq!(index.starts, [0, 100, 300], "the empty ones left out");
    }

    /// The demo captures' indexes (pcap and pcapng, several link types), stored compactly,
    /// give back what the indexer made.
    #[test]
    fn demo_captures_round_trip() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("captures");
        let mut checked = 0;
        for path in std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()) {
            if !path
                .extension()
                .is_some_and(|e| e == "pcap" || e == "pcapng")
            {
                continue;
            }
            let mut ix = super::super::index::Indexer::open(&path).unwrap();
            let mut entries = Vec::new();
            while ix.next_chunk(&mut entries, 1000).unwrap() {}
            let mut index = FrameIndex::new();
            index.extend(&entries);
            assert_eq!(index.len(), entries.len());
            for (i, e) in entries.iter().enumerate() {
                assert_eq!(
                    index.get(i).as_ref(),
                    Some(e),
                    "{}: frame {}",
                    path.display(),
                    i + 1
                );
            }
            checked += 1;
        }
        assert!(checked > 10);
    }
}
