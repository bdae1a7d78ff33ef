//! Where frames come from, and the one loop that reads them.
//!
//! A [`FrameSource`] hands out frames one at a time, borrowed until the next call: capture files
//! merged by time today ([`crate::capture::MergedReader`]), a live interface or a pair of taps
//! next. [`drive`] is the only frame-reading loop: for a large or unbounded source it reads on a
//! second thread into recycled [`Batch`]es ([`crate::ahead`]), so that reading and the caller's
//! work (dissecting, formatting, replaying) use both cores; for a small one it reads in place.
//! The caller may also ask the reading thread to prepare some frames itself (the replay hands
//! it the dissecting when its own thread is busy): those arrive as [`Slot::Prepared`].

// Indexing cannot panic here: a batch's frame ranges were pushed with the bytes they index.
#![allow(clippy::indexing_slicing)]

use anyhow::{Context, bail};
use std::ops::ControlFlow;
use std::sync::Arc;

use crate::ahead::{self, Filled};
use crate::capture::{CaptureError, CaptureReader, MergedReader, SharedFrame};
use crate::frame::{Frame, LinkType, Problem};

/// A source of frames in capture order: [`advance`](Self::advance) moves to the next frame,
/// [`current`](Self::current) lends it until the next move (two steps, so that adapters can
/// skip frames without fighting the borrow checker).
pub trait FrameSource: Send {
    /// Move to the next frame: `None` at the end. After an error the source is finished.
    fn advance(&mut self) -> Option<Result<(), CaptureError>>;

    /// The frame the source stands on (after [`advance`](Self::advance) returned `Ok`).
    fn current(&self) -> Frame<'_>;

    /// Bytes the source will deliver in all, when known (files; not pipes or interfaces).
    fn size_hint(&self) -> Option<u64>;

    /// Whether [`advance`](Self::advance) would return without waiting for more input: a
    /// live interface says no when everything received so far has been handed out (readers
    /// then hand over what they have instead of waiting for a full batch, and writers flush).
    fn ready(&self) -> bool {
        true
    }

    /// Time of the first frame the source read, delivered or not (relative times count from
    /// it); `None` before any.
    fn first_time_ns(&self) -> Option<u64>;

    /// The current frame as a range of a buffer that may be held past the next move, when
    /// the source reads into such buffers (capture files); `None` when its bytes must be
    /// copied to be kept.
    fn current_shared(&self) -> Option<SharedFrame<'_>> {
        None
    }

    /// Gives back a buffer [`current_shared`](Self::current_shared) lent, for reuse.
    fn recycle(&mut self, buf: Arc<Vec<u8>>) {
        drop(buf);
    }

    /// The next frame, `None` at the end.
    fn next_frame(&mut self) -> Option<Result<Frame<'_>, CaptureError>> {
        match self.advance()? {
            Ok(()) => Some(Ok(self.current())),
            Err(e) => Some(Err(e)),
        }
    }
}

impl FrameSource for MergedReader {
    fn advance(&mut self) -> Option<Result<(), CaptureError>> {
        MergedReader::advance(self)
    }

    #[inline]
    fn current(&self) -> Frame<'_> {
        MergedReader::current(self)
    }

    fn current_shared(&self) -> Option<SharedFrame<'_>> {
        MergedReader::current_shared(self)
    }

    fn recycle(&mut self, buf: Arc<Vec<u8>>) {
        MergedReader::recycle(self, buf);
    }

    fn size_hint(&self) -> Option<u64> {
        MergedReader::size_hint(self)
    }

    fn first_time_ns(&self) -> Option<u64> {
        MergedReader::first_time_ns(self)
    }
}

impl FrameSource for CaptureReader {
    fn advance(&mut self) -> Option<Result<(), CaptureError>> {
        CaptureReader::advance(self)
    }

    fn current(&self) -> Frame<'_> {
        CaptureReader::current(self)
    }

    fn current_shared(&self) -> Option<SharedFrame<'_>> {
        Some(CaptureReader::current_shared(self))
    }

    fn recycle(&mut self, buf: Arc<Vec<u8>>) {
        CaptureReader::recycle(self, buf);
    }

    fn size_hint(&self) -> Option<u64> {
        CaptureReader::size_hint(self)
    }

    fn first_time_ns(&self) -> Option<u64> {
        CaptureReader::first_time_ns(self)
    }
}

/// Only the frames of a [`FrameRange`] of another source; it ends once past the range.
#[derive(Debug)]
pub struct Ranged<S> {
    inner: S,
    range: FrameRange,
    past: bool,
}

impl<S: FrameSource> Ranged<S> {
    pub fn new(inner: S, range: FrameRange) -> Self {
        Ranged {
            inner,
            range,
            past: false,
        }
    }
}

impl<S: FrameSource> FrameSource for Ranged<S> {
    fn advance(&mut self) -> Option<Result<(), CaptureError>> {
        if self.past {
            return None;
        }
        loop {
            if let Err(e) = self.inner.advance()? {
                return Some(Err(e));
            }
            let number = self.inner.current().number;
            if self.range.is_past(number) {
                self.past = true;
                return None;
            }
            if self.range.contains(number) {
                return Some(Ok(()));
            }
        }
    }

    fn current(&self) -> Frame<'_> {
        self.inner.current()
    }

    fn size_hint(&self) -> Option<u64> {
        self.inner.size_hint()
    }

    fn first_time_ns(&self) -> Option<u64> {
        self.inner.first_time_ns()
    }

    fn ready(&self) -> bool {
        self.inner.ready()
    }

    fn current_shared(&self) -> Option<SharedFrame<'_>> {
        self.inner.current_shared()
    }

    fn recycle(&mut self, buf: Arc<Vec<u8>>) {
        self.inner.recycle(buf);
    }
}

/// The first `n` frames of another source, without reading past them (a file still being
/// written, whose end may be a record cut in the middle).
#[derive(Debug)]
pub struct Limited<S> {
    inner: S,
    left: u64,
}

impl<S: FrameSource> Limited<S> {
    pub fn new(inner: S, n: u64) -> Self {
        Limited { inner, left: n }
    }
}

impl<S: FrameSource> FrameSource for Limited<S> {
    fn advance(&mut self) -> Option<Result<(), CaptureError>> {
        self.left = self.left.checked_sub(1)?;
        self.inner.advance()
    }

    fn current(&self) -> Frame<'_> {
        self.inner.current()
    }

    fn size_hint(&self) -> Option<u64> {
        self.inner.size_hint()
    }

    fn first_time_ns(&self) -> Option<u64> {
        self.inner.first_time_ns()
    }

    fn current_shared(&self) -> Option<SharedFrame<'_>> {
        self.inner.current_shared()
    }

    fn recycle(&mut self, buf: Arc<Vec<u8>>) {
        self.inner.recycle(buf);
    }
}

/// Frames per batch at most: a hand-off costs microseconds, a batch about 100 µs of work.
const BATCH_FRAMES: usize = 1024;
/// Captured bytes per batch (a batch ends after the frame that reaches this). A quarter of
/// this, with four batches in circulation, replayed 1 KiB frames 3-6 % faster (the read
/// buffers stay in cache) but made `dissect -f jsonl` on small frames 1.155x slower; with six
/// batches the gain was within the noise.
const BATCH_BYTES: usize = 1 << 20;
/// Batches in circulation.
const BATCHES: usize = 6;
/// Source buffers one batch may hold (a pipe's short reads would otherwise let a batch hold
/// many mostly empty ones).
const BATCH_BUFFERS: usize = 4;
/// [`Meta::buf`] of a frame whose bytes were copied to the batch's own buffer.
const OWN: u32 = u32::MAX;
/// Sources at least this large (and unbounded ones) are read on a second thread when there
/// are two cores; smaller ones are done before that pays.
const AHEAD_MIN_BYTES: u64 = 4 << 20;
/// Frames between two looks at how far ahead the reading thread is.
const DECIDE_EVERY: usize = 64;
/// Bytes a capture spends on a frame besides its data (a pcap record header), for progress.
const RECORD_OVERHEAD: u64 = 16;

/// How [`drive`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Threads {
    /// On a second thread when the source is large or unbounded and there are two cores.
    ///
    /// Two threads whatever the machine's phase (`bench/cross_core.rs`). In the slow phase one
    /// thread (`taskset -c 0`) beat two on 1 KiB frames (0.32 s against 0.45 s) and on small
    /// frames (0.40 against 0.46 s), but not over 400,000 flows (0.65 against 0.55 s); in the
    /// fast one it took 1.7-2.0x the time of two (medians of 17 to 249 runs each). Choosing
    /// by a probe at start-up would have to weigh the flows too, and is not done.
    Auto,
    /// In place, on the caller's thread.
    One,
    /// On a second thread, always.
    Two,
    /// In place, a batch at a time: every frame of a batch prepared first, then handed over
    /// with looks at the ones coming ([`Slot::Ahead`]), as with a reading thread. For a
    /// replay that runs beside other busy threads (`analyze --tap`), where a thread more of
    /// its own would only share the cores.
    Batched,
}

/// One frame as [`drive`] hands it over.
#[derive(Debug)]
pub enum Slot<'a, P> {
    /// The frame itself.
    Frame(Frame<'a>),
    /// What the reading thread's `prepare` made of it, and what it kept beside the batch's
    /// items ([`Prepare::out`]: `P` says where its own are).
    Prepared(&'a P, &'a Side),
    /// Before the next frames (up to [`AHEAD_WINDOW`]) are handed over, what `prepare` made of
    /// them, all at once: the consumer may start fetching what they will need from memory
    /// for all of them, rather than wait on it frame by frame. Each comes again, as
    /// [`Slot::Prepared`], in its turn. `each`'s answer counts as for any slot (an error or a
    /// break stops the reading).
    Ahead(Coming<'a, P>),
}

/// Frames [`Slot::Ahead`] shows at a time: enough for their memory fetches to overlap, few
/// enough that what they fetch is still in cache when their turn comes (a whole batch, 1,024
/// frames, measured no better; with the replay's prefetches, 32 did better than 64 and 16).
pub const AHEAD_WINDOW: usize = 32;

/// What `prepare` made of the next frames (see [`Slot::Ahead`]), in capture order.
#[derive(Debug)]
pub struct Coming<'a, P> {
    items: std::slice::Iter<'a, Item<P>>,
}

// derived, it would want `P: Clone`
impl<P> Clone for Coming<'_, P> {
    fn clone(&self) -> Self {
        Coming {
            items: self.items.clone(),
        }
    }
}

impl<'a, P> Iterator for Coming<'a, P> {
    type Item = &'a P;

    fn next(&mut self) -> Option<&'a P> {
        self.items.find_map(Item::prepared)
    }
}

/// What `prepare` keeps beside a batch's items, for what does not fit in one: bytes (the
/// consumer's to read, with the frames a source did not lend, which are copied here) and the
/// frames' dissection problems. Kept from batch to batch, so nothing is allocated per frame.
#[derive(Debug, Default)]
pub struct Side {
    pub bytes: Vec<u8>,
    pub problems: Vec<Problem>,
}

impl Side {
    fn clear(&mut self) {
        self.bytes.clear();
        self.problems.clear();
    }
}

/// What `prepare` is told on the reading thread, and where it may keep what does not fit in
/// its answer (the batch's side storage: nothing is allocated per frame).
#[derive(Debug)]
pub struct Prepare<'b> {
    /// The consumer has batches waiting (two or more): work done here is work it is spared.
    pub busy: bool,
    /// Time of the first frame read (relative times count from it).
    pub first_time_ns: u64,
    pub out: &'b mut Side,
}

/// Where the reading is, as [`drive`] tells the consumer with every frame.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Time of the first frame read (relative times count from it), 0 before any.
    pub first_time_ns: u64,
    /// Bytes read so far (frame data plus a record header per frame); read ahead on a second
    /// thread, up to the end of the batch the frame came in.
    pub bytes: u64,
    /// Nothing more had arrived when this frame was handed over (a live source waits for
    /// input next): the moment to flush what was written.
    pub idle: bool,
}

#[derive(Debug, Clone, Copy)]
struct Meta {
    number: u64,
    time_ns: u64,
    caplen: u32,
    orig_len: u32,
    link: LinkType,
    input: u16,
    /// Which of the batch's source buffers holds the bytes, or [`OWN`].
    buf: u32,
    start: usize,
    end: usize,
}

/// One frame of a batch: what `prepare` made of it, else where its bytes are, in the same
/// bytes (the larger of the two: the replay's answer, two cache lines). Items are kept from
/// batch to batch and written over.
///
/// An item used to hold both: the replay's answer with its problem (160 bytes) and the place
/// (216 bytes in all), of which the consumer read 3 to 4 lines per frame, each just written
/// by the reading thread on the other core. One or the other, with the problem kept aside
/// ([`Side`]), took 0.958x the time on small frames (31 pairs), 0.965x at 400,000 flows and
/// 0.963x on 1 KiB WRITEs with their ACKs (21 pairs each). Measured and not kept: the places
/// in a list of their own beside items of the answer (1.024x, 15 pairs, an earlier stop);
/// the answer packed into one line, a 64-byte item (0.996x and 1.002x, 31 pairs twice: the
/// packing and unpacking cost what the line saved).
#[derive(Debug)]
enum Item<P> {
    Prepared(P),
    /// The frame, when nothing was prepared.
    Frame(Meta),
}

impl<P> Item<P> {
    fn prepared(&self) -> Option<&P> {
        match self {
            Item::Prepared(p) => Some(p),
            Item::Frame(_) => None,
        }
    }
}

/// Bytes of a batch item whose `prepare` answers a `P` (the replay's test holds its items to
/// two cache lines).
#[cfg(test)]
pub(crate) const fn item_size<P>() -> usize {
    std::mem::size_of::<Item<P>>()
}

/// Frames read ahead, in capture order: ranges of the source's buffers (or copied bytes),
/// or what `prepare` made of them.
#[derive(Debug)]
pub struct Batch<P> {
    /// Copied frames, and what `prepare` kept beside the items.
    side: Side,
    /// Source buffers the frames are in ([`FrameSource::current_shared`]).
    shared: Vec<Arc<Vec<u8>>>,
    /// Captured bytes of the frames.
    bytes: usize,
    /// The frames, in `items[..len]` (the rest are kept to be written over).
    items: Vec<Item<P>>,
    len: usize,
    /// Where the reading was at the end of the batch.
    at: Progress,
    /// The source's error right after these frames (the reading then stops).
    error: Option<CaptureError>,
    /// The batch ended because the source had nothing more ready.
    idle_end: bool,
}

impl<P> Batch<P> {
    fn new() -> Self {
        Batch {
            side: Side::default(),
            shared: Vec::with_capacity(BATCH_BUFFERS),
            bytes: 0,
            items: Vec::with_capacity(BATCH_FRAMES),
            len: 0,
            at: Progress::default(),
            error: None,
            idle_end: false,
        }
    }

    fn full(&self) -> bool {
        self.len >= BATCH_FRAMES
            || self.bytes >= BATCH_BYTES
            || self.side.bytes.len() >= BATCH_BYTES
            || self.shared.len() >= BATCH_BUFFERS
    }

    /// `item` after the batch's frames (a new one while the list is shorter than any batch so
    /// far, else written over the one there).
    fn push(&mut self, item: Item<P>) {
        match self.items.get_mut(self.len) {
            Some(old) => *old = item,
            None => self.items.push(item),
        }
        self.len += 1;
    }

    /// The frames handed over, in order.
    fn filled(&self) -> &[Item<P>] {
        self.items.get(..self.len).unwrap_or_default()
    }

    /// The frame by reference to its source buffer when the source lends it, else copied, as
    /// the next item.
    fn set_frame(&mut self, f: &Frame<'_>, shared: Option<SharedFrame<'_>>) {
        let (buf, start, end) = match shared {
            Some(s) => {
                if !self.shared.last().is_some_and(|b| Arc::ptr_eq(b, s.buf)) {
                    self.shared.push(Arc::clone(s.buf));
                }
                let index = u32::try_from(self.shared.len() - 1).unwrap_or(OWN);
                (index, s.start, s.end)
            }
            None => {
                let bytes = &mut self.side.bytes;
                let start = bytes.len();
                bytes.extend_from_slice(f.data);
                (OWN, start, bytes.len())
            }
        };
        let meta = Meta {
            number: f.number,
            time_ns: f.time_ns,
            caplen: f.caplen,
            orig_len: f.orig_len,
            link: f.link,
            input: f.input,
            buf,
            start,
            end,
        };
        self.push(Item::Frame(meta));
    }

    /// The bytes of a frame set with [`set_frame`](Self::set_frame).
    fn bytes_of(&self, m: &Meta) -> &[u8] {
        let buf = match self.shared.get(m.buf as usize) {
            Some(shared) => shared.as_slice(),
            None => &self.side.bytes,
        };
        buf.get(m.start..m.end).unwrap_or_default()
    }
}

/// Whether a second thread would get a core of its own.
#[must_use]
pub fn two_cores() -> bool {
    std::thread::available_parallelism().is_ok_and(|n| n.get() > 1)
}

/// The frame-reading loop: every frame of `source`, in order, to `each` with the [`Progress`]
/// so far, until the source ends or `each` breaks.
///
/// With a reading thread (see [`Threads`]), `prepare` runs there on every frame, told whether
/// the consumer has batches waiting and given the batch's buffer to write to ([`Prepare`]),
/// with an empty place in the batch: what it puts there reaches `each` as
/// [`Slot::Prepared`] instead of the frame. Read in place, it is not called.
///
/// # Errors
/// The source's error (after every frame before it was handed over), or the first error
/// `each` returns.
pub fn drive<S, P, E>(
    source: &mut S,
    threads: Threads,
    prepare: impl FnMut(&Frame<'_>, Prepare<'_>, &mut Option<P>) + Send,
    mut each: impl FnMut(Slot<'_, P>, Progress) -> Result<ControlFlow<()>, E>,
) -> Result<(), E>
where
    S: FrameSource + ?Sized,
    P: Send,
    E: From<CaptureError>,
{
    let ahead = match threads {
        Threads::One => false,
        Threads::Two => true,
        Threads::Auto => two_cores() && source.size_hint().is_none_or(|n| n >= AHEAD_MIN_BYTES),
        Threads::Batched => return batched(source, prepare, each),
    };
    if !ahead {
        let mut at = Progress::default();
        while let Some(moved) = source.advance() {
            moved?;
            if at.bytes == 0 {
                at.first_time_ns = source.first_time_ns().unwrap_or(0);
            }
            at.idle = !source.ready();
            let frame = source.current();
            at.bytes += u64::from(frame.caplen) + RECORD_OVERHEAD;
            if each(Slot::Frame(frame), at)?.is_break() {
                break;
            }
        }
        return Ok(());
    }
    read_ahead(source, prepare, each)
}

/// `batch` emptied (its source buffers back to `source`), then filled with frames until it is
/// full or the source ends; `busy_now` says whether the consumer has batches waiting.
fn refill<S, P>(
    batch: &mut Batch<P>,
    source: &mut S,
    at: &mut Progress,
    busy_now: impl Fn() -> bool,
    prepare: &mut impl FnMut(&Frame<'_>, Prepare<'_>, &mut Option<P>),
) -> Filled
where
    S: FrameSource + ?Sized,
{
    batch.side.clear();
    batch.len = 0;
    batch.bytes = 0;
    for buf in batch.shared.drain(..) {
        source.recycle(buf);
    }
    batch.idle_end = false;
    let mut busy = false;
    let filled = loop {
        if batch.full() {
            break Filled::More;
        }
        if batch.len > 0 && !source.ready() {
            batch.idle_end = true;
            break Filled::More;
        }
        if batch.len.is_multiple_of(DECIDE_EVERY) {
            busy = busy_now();
        }
        match source.advance() {
            None => break Filled::Last,
            Some(Err(e)) => {
                batch.error = Some(e);
                break Filled::Last;
            }
            Some(Ok(())) => {}
        }
        if at.bytes == 0 {
            at.first_time_ns = source.first_time_ns().unwrap_or(0);
        }
        let frame = source.current();
        at.bytes += u64::from(frame.caplen) + RECORD_OVERHEAD;
        batch.bytes += frame.data.len();
        let told = Prepare {
            busy,
            first_time_ns: at.first_time_ns,
            out: &mut batch.side,
        };
        let mut place = None;
        prepare(&frame, told, &mut place);
        match place {
            Some(prepared) => batch.push(Item::Prepared(prepared)),
            None => batch.set_frame(&frame, source.current_shared()),
        }
    };
    batch.at = *at;
    filled
}

/// [`drive`] for callers that only want the frames (nothing prepared on the reading thread).
///
/// # Errors
/// As [`drive`].
pub fn for_each<S, E>(
    source: &mut S,
    threads: Threads,
    mut each: impl FnMut(Frame<'_>, Progress) -> Result<ControlFlow<()>, E>,
) -> Result<(), E>
where
    S: FrameSource + ?Sized,
    E: From<CaptureError>,
{
    drive(source, threads, prepare_nothing, |slot, at| match slot {
        Slot::Frame(frame) => each(frame, at),
        Slot::Prepared((), _) | Slot::Ahead(_) => Ok(ControlFlow::Continue(())),
    })
}

fn prepare_nothing(_: &Frame<'_>, _: Prepare<'_>, _: &mut Option<()>) {}

fn read_ahead<S, P, E>(
    source: &mut S,
    mut prepare: impl FnMut(&Frame<'_>, Prepare<'_>, &mut Option<P>) + Send,
    mut each: impl FnMut(Slot<'_, P>, Progress) -> Result<ControlFlow<()>, E>,
) -> Result<(), E>
where
    S: FrameSource + ?Sized,
    P: Send,
    E: From<CaptureError>,
{
    let mut at = Progress::default();
    let pool = (0..BATCHES).map(|_| Batch::new()).collect();
    // `move`: the reading thread owns its progress (see `ahead::run`)
    let fill = move |batch: &mut Batch<P>, ahead: &ahead::Ahead| {
        // two batches ahead, not one: one filled batch waits at every hand-over while the
        // consumer finishes the batch before it, also when the reading thread is the slower
        // side (1 KiB frames), which then dissected besides (12 % slower)
        refill(
            batch,
            &mut *source,
            &mut at,
            || ahead.waiting() > 1,
            &mut prepare,
        )
    };
    // a break (the consumer stopped) needs nothing more than the end does
    let _ = ahead::run(pool, fill, |batch: &mut Batch<P>| {
        hand_over(batch, &mut each)
    })?;
    Ok(())
}

/// [`Threads::Batched`]: [`read_ahead`]'s batches, filled and handed over in turn on this
/// thread. `prepare` is told the consumer is busy (it is: it waits for the batch).
fn batched<S, P, E>(
    source: &mut S,
    mut prepare: impl FnMut(&Frame<'_>, Prepare<'_>, &mut Option<P>),
    mut each: impl FnMut(Slot<'_, P>, Progress) -> Result<ControlFlow<()>, E>,
) -> Result<(), E>
where
    S: FrameSource + ?Sized,
    E: From<CaptureError>,
{
    let mut at = Progress::default();
    let mut batch = Batch::new();
    loop {
        let filled = refill(&mut batch, source, &mut at, || true, &mut prepare);
        if hand_over(&mut batch, &mut each)?.is_break() || matches!(filled, Filled::Last) {
            return Ok(());
        }
    }
}

/// Every frame of `batch` to `each`, in order, with a look at the next [`AHEAD_WINDOW`]
/// before each window of them; then the source's error that ended the batch, if one did.
fn hand_over<P, E>(
    batch: &mut Batch<P>,
    each: &mut impl FnMut(Slot<'_, P>, Progress) -> Result<ControlFlow<()>, E>,
) -> Result<ControlFlow<()>, E>
where
    E: From<CaptureError>,
{
    let mut at = batch.at;
    let items = batch.filled();
    let last = items.len().saturating_sub(1);
    for (i, item) in items.iter().enumerate() {
        if i.is_multiple_of(AHEAD_WINDOW) {
            let next = items.get(i..).unwrap_or_default();
            let coming = Coming {
                items: next.get(..AHEAD_WINDOW).unwrap_or(next).iter(),
            };
            if each(Slot::Ahead(coming), at)?.is_break() {
                return Ok(ControlFlow::Break(()));
            }
        }
        at.idle = batch.idle_end && i == last;
        let slot = match item {
            Item::Prepared(p) => Slot::Prepared(p, &batch.side),
            Item::Frame(m) => Slot::Frame(Frame {
                number: m.number,
                time_ns: m.time_ns,
                caplen: m.caplen,
                orig_len: m.orig_len,
                link: m.link,
                input: m.input,
                data: batch.bytes_of(m),
            }),
        };
        if each(slot, at)?.is_break() {
            return Ok(ControlFlow::Break(()));
        }
    }
    if let Some(e) = batch.error.take() {
        return Err(e.into());
    }
    Ok(ControlFlow::Continue(()))
}

/// An inclusive range of 1-based frame numbers (`--frames A-B`, `A-`, `N`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameRange {
    pub first: u64,
    /// `None`: to the end of the capture.
    pub last: Option<u64>,
}

impl FrameRange {
    /// Every frame.
    pub const ALL: FrameRange = FrameRange {
        first: 1,
        last: None,
    };

    #[must_use]
    pub fn contains(&self, number: u64) -> bool {
        number >= self.first && self.last.is_none_or(|last| number <= last)
    }

    /// True once `number` is past the range (nothing more can match).
    #[must_use]
    pub fn is_past(&self, number: u64) -> bool {
        self.last.is_some_and(|last| number > last)
    }
}

impl std::str::FromStr for FrameRange {
    type Err = anyhow::Error;

    /// `A-B`, `A-` or `N`, 1-based and inclusive; `A` ≤ `B`.
    fn from_str(s: &str) -> anyhow::Result<Self> {
        let num = |t: &str| -> anyhow::Result<u64> {
            let t = t.trim();
            let n: u64 = t
                .parse()
                .with_context(|| format!("--frames {s:?}: `{t}` is not a frame number"))?;
            if n == 0 {
                bail!("--frames {s:?}: frame numbers start at 1");
            }
            Ok(n)
        };
        let range = match s.split_once('-') {
            None => {
                let n = num(s)?;
                FrameRange {
                    first: n,
                    last: Some(n),
                }
            }
            Some((a, b)) if b.trim().is_empty() => FrameRange {
                first: num(a)?,
                last: None,
            },
            Some((a, b)) => FrameRange {
                first: if a.trim().is_empty() { 1 } else { num(a)? },
                last: Some(num(b)?),
            },
        };
        if range.last.is_some_and(|last| last < range.first) {
            bail!("--frames {s:?}: the range ends before it starts");
        }
        Ok(range)
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use std::io::Read;

    /// The byte at `at` of frame `frame`.
    fn pattern(frame: usize, at: usize) -> u8 {
        (at ^ frame.wrapping_mul(31)).to_le_bytes()[0]
    }

    /// Frame sizes up to 9,000 bytes.
    fn size(frame: usize) -> usize {
        60 + (frame * 7919) % 9000
    }

    /// Reads at most `chunk` bytes at a time, as a pipe does.
    struct Trickle {
        bytes: std::io::Cursor<Vec<u8>>,
        chunk: usize,
    }

    impl Read for Trickle {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = buf.len().min(self.chunk);
            self.bytes.read(&mut buf[..n])
        }
    }

    fn frames_read(bytes: &[u8], chunk: usize, threads: Threads) -> Vec<(u64, u64, Vec<u8>)> {
        let src = Trickle {
            bytes: std::io::Cursor::new(bytes.to_vec()),
            chunk,
        };
        let mut reader = CaptureReader::from_reader("test.pcap", src).unwrap();
        let mut seen = Vec::new();
        for_each(&mut reader, threads, |f, _| -> Result<_, CaptureError> {
            seen.push((f.number, f.time_ns, f.data.to_vec()));
            Ok(ControlFlow::Continue(()))
        })
        .unwrap();
        seen
    }

    /// Frames handed to the other thread as ranges of the reader's buffers keep their bytes
    /// while the reader reads on (into other buffers): the same frames as read in place,
    /// over many buffers' worth of frames, with whole and with short reads.
    #[test]
    fn frames_lent_from_the_read_buffer_keep_their_bytes() {
        let fill = |i: usize, d: &mut [u8]| {
            for (at, b) in d.iter_mut().enumerate() {
                *b = pattern(i, at);
            }
        };
        let file = crate::capture::index::test::write_pcap(3000, size, fill, 0);
        let bytes = std::fs::read(file.path()).unwrap();
        let expected = frames_read(&bytes, usize::MAX, Threads::One);
        assert_eq!(expected.len(), 3000);
        for (i, (number, _, data)) in expected.iter().enumerate() {
            assert_eq!(*number, i as u64 + 1);
            assert_eq!(data.len(), size(i));
            assert!(data.iter().enumerate().all(|(at, &x)| x == pattern(i, at)));
        }
        for chunk in [usize::MAX, 100_000, 7_001] {
            for threads in [Threads::Two, Threads::Batched] {
                assert!(
                    frames_read(&bytes, chunk, threads) == expected,
                    "reads of {chunk} bytes, {threads:?}"
                );
            }
        }
    }

    #[test]
    fn frame_ranges() {
        let r: FrameRange = "10-20".parse().unwrap();
        assert_eq!(
            r,
            FrameRange {
                first: 10,
                last: Some(20)
            }
        );
        let r: FrameRange = "7".parse().unwrap();
        assert!(r.contains(7) && !r.contains(8) && r.is_past(8));
        let r: FrameRange = "5-".parse().unwrap();
        assert!(r.contains(5) && r.contains(u64::MAX) && !r.contains(4));
        for bad in ["", "0", "a-b", "20-10", "1-2-3", "-"] {
            assert!(bad.parse::<FrameRange>().is_err(), "{bad}");
        }
    }
}
