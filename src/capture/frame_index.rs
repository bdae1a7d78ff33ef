//! [`FrameIndex`]: the inspector's index of every frame of a capture in 12 bytes a frame, not
//! the 32 of an [`IndexEntry`] (a 2 GB capture of small frames holds 10 million of them).
//!
//! Frames are grouped in blocks of [`BLOCK`]; a block holds its first frame's offset, time
//! and link type, and each frame its offset and time from those (`u32` each) and its stored
//! length. A frame that does not fit (more than 4.29 s or 4 GiB from its block's first frame,
//! time going backwards, another link type, a captured length other than its stored one) is
//! kept whole on the side; its time slot says so. Original lengths are kept as the difference
//! from the stored one (2 bytes a frame), from the first frame cut short on (a capture with a
//! snap length), and on the side beyond 65,534.

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

/// The index of a capture's frames, in file order.
#[derive(Debug, Default)]
pub struct FrameIndex {
    blocks: Vec<Block>,
    /// Offset from the block's first frame.
    offset: Vec<u32>,
    /// Time from the block's first frame ([`ASIDE`]: in `aside`).
    time: Vec<u32>,
    /// Bytes stored (the captured length).
    len: Vec<u32>,
    /// Original length minus stored length, once a frame was cut short ([`LONG`]: in
    /// `long`); empty while none was.
    extra: Vec<u16>,
    /// Frames kept whole, by position (ascending).
    aside: Vec<(usize, IndexEntry)>,
    /// Original lengths too far above the stored one, by position (ascending).
    long: Vec<(usize, u32)>,
}

impl FrameIndex {
    #[must_use]
    pub fn new() -> Self {
        FrameIndex::default()
    }

    /// Frames indexed.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len.is_empty()
    }

    /// Appends the next frame's entry.
    pub fn push(&mut self, e: &IndexEntry) {
        let i = self.len.len();
        if i.is_multiple_of(BLOCK) {
            self.blocks.push(Block {
                offset: e.offset,
                time_ns: e.time_ns,
                link: e.link,
            });
        }
        let Some(b) = self.blocks.last().copied() else {
            return;
        };
        let offset = e.offset.checked_sub(b.offset).map(u32::try_from);
        let time = e.time_ns.checked_sub(b.time_ns).map(u32::try_from);
        match (offset, time) {
            (Some(Ok(off)), Some(Ok(t))) if t != ASIDE && e.link == b.link && e.caplen == e.len => {
                self.offset.push(off);
                self.time.push(t);
            }
            _ => {
                self.offset.push(0);
                self.time.push(ASIDE);
                self.aside.push((i, *e));
            }
        }
        self.len.push(e.len);
        let extra = e.orig_len.saturating_sub(e.len);
        if extra > 0 && self.extra.is_empty() {
            self.extra.resize(i, 0);
        }
        if !self.extra.is_empty() {
            match u16::try_from(extra) {
                Ok(x) if x != LONG => self.extra.push(x),
                _ => {
                    self.extra.push(LONG);
                    self.long.push((i, e.orig_len));
                }
            }
        }
    }

    /// Appends entries, in order.
    pub fn extend(&mut self, entries: &[IndexEntry]) {
        for e in entries {
            self.push(e);
        }
    }

    /// The entry of the frame at `i` (0-based).
    #[must_use]
    pub fn get(&self, i: usize) -> Option<IndexEntry> {
        let len = *self.len.get(i)?;
        let time = *self.time.get(i)?;
        if time == ASIDE {
            let at = self.aside.binary_search_by_key(&i, |&(j, _)| j).ok()?;
            return self.aside.get(at).map(|&(_, e)| e);
        }
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
            offset: b.offset + u64::from(*self.offset.get(i)?),
            time_ns: b.time_ns + u64::from(time),
            len,
            caplen: len,
            orig_len,
            link: b.link,
        })
    }

    /// The first frame's time.
    #[must_use]
    pub fn first_time_ns(&self) -> Option<u64> {
        self.get(0).map(|e| e.time_ns)
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

    #[test]
    fn gives_back_every_entry() {
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
        let mut index = FrameIndex::new();
        index.extend(&all[..999]);
        assert!(index.extra.is_empty(), "no frame was cut yet");
        index.extend(&all[999..]);
        assert_eq!(index.len(), all.len());
        for (i, e) in all.iter().enumerate() {
            assert_eq!(index.get(i), Some(*e), "frame {i}");
        }
        assert_eq!(index.get(all.len()), None);
        assert_eq!(index.first_time_ns(), Some(all[0].time_ns));
        // 7, 300, 600, 900, and 700 to the end of its block
        assert_eq!(index.aside.len(), 4 + 68);
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
