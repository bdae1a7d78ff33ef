//! The frame layer every command stands on: a captured [`Frame`] (from a file, and later a live
//! interface), the [`FrameView`] of it that the dissector produced and classified (truncated or
//! malformed, interfaces.md §2 and §6.5), what went wrong with it ([`Problem`]), what a display
//! filter may ask besides its fields ([`FrameFacts`]), and its one-line summary
//! ([`summary`]). `dissect`, `analyze`, `inspect`, the filter and the replay engine all read
//! frames through here; none of them reaches into another command for it.

pub mod summary;

use std::fmt;

use rocescope_dissectors::WireError;
use rocescope_dissectors::encap::erspan;
pub use rocescope_dissectors::link::LinkType;
use rocescope_dissectors::stack::{DissectOptions, Dissected, OuterKind, walk_unwalked};

/// One captured frame, borrowed from its source's buffer until the source's next call.
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
    /// Which input it came from: the index of its file among those merged (0 for one).
    pub input: u16,
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

/// What went wrong with one frame (it is still shown, with this as its error).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem {
    /// The dissector's first complaint.
    Wire(WireError),
    /// A link type the dissector cannot start on.
    UnsupportedLink(LinkType),
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Wire(e) => write!(f, "{e}"),
            Problem::UnsupportedLink(l) => write!(f, "unsupported link type {l}"),
        }
    }
}

/// What a display filter may ask about a frame besides its field tree.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FrameFacts {
    pub number: u64,
    pub time_ns: u64,
    pub len: u64,
    pub caplen: u64,
    pub truncated: bool,
    pub malformed: bool,
}

/// One frame, dissected and classified: what every output format, the filter and the engine
/// look at.
#[derive(Debug, Clone, Copy)]
pub struct FrameView<'a> {
    /// Borrowed, not copied: a copy of a frame just built a field at a time stalled (its wide
    /// loads wait for the narrow stores), a few percent of `analyze` on small frames.
    pub frame: &'a Frame<'a>,
    /// `None` when the link type is not supported.
    pub dissected: Option<Dissected<'a>>,
    pub problem: Option<Problem>,
    /// Captured short of the original length, or cut inside a header or length field.
    pub truncated: bool,
    /// Captured whole but inconsistent (§6.5).
    pub malformed: bool,
    /// Nanoseconds since the first frame of the capture (negative when time goes backwards).
    pub rel_ns: i128,
}

impl<'a> FrameView<'a> {
    /// Dissect `frame` from its link type and classify the result.
    #[must_use]
    pub fn new(frame: &'a Frame<'a>, options: &DissectOptions<'_>, first_time_ns: u64) -> Self {
        let mut view = FrameView::unwalked(frame, options, first_time_ns);
        view.dissect(options);
        view
    }

    /// [`FrameView::new`] built and dissected in the caller's `place`, for the per-frame
    /// paths: returned by value, the whole view (384 bytes) was copied out of the function
    /// after its dissection on every frame.
    #[inline]
    pub fn new_in<'s>(
        place: &'s mut Option<FrameView<'a>>,
        frame: &'a Frame<'a>,
        options: &DissectOptions<'_>,
        first_time_ns: u64,
    ) -> &'s FrameView<'a> {
        let view = place.insert(FrameView::unwalked(frame, options, first_time_ns));
        view.dissect(options);
        view
    }

    /// The view before its dissection's walk.
    #[inline]
    fn unwalked(frame: &'a Frame<'a>, options: &DissectOptions<'_>, first_time_ns: u64) -> Self {
        // The dissection's struct is built right here, in the view: built apart and moved in,
        // its copy stalled on the bytes just written (a few percent of `analyze`).
        FrameView {
            frame,
            dissected: frame
                .link
                .start()
                .map(|start| Dissected::unwalked(frame.data, start, options)),
            problem: None,
            truncated: frame.truncated(),
            malformed: false,
            rel_ns: i128::from(frame.time_ns) - i128::from(first_time_ns),
        }
    }

    /// Walk the view's unwalked dissection and classify the result.
    fn dissect(&mut self, options: &DissectOptions<'_>) {
        let frame = self.frame;
        let (Some(start), Some(dissected)) = (frame.link.start(), &mut self.dissected) else {
            self.problem = Some(Problem::UnsupportedLink(frame.link));
            return;
        };
        let err = walk_unwalked(dissected, start, options);
        self.after_dissection();
        if let Some(err) = err {
            match err {
                // Bytes missing past the end of what was captured: a cut frame. Real sniffers
                // write orig_len == caplen on frames they cut (captures/real/README.md,
                // nccl-uc-write-snaplen.pcap), so this does not look at orig_len.
                WireError::Truncated { offset, need, .. } => {
                    if offset.saturating_add(need) > frame.data.len() {
                        self.truncated = true;
                    } else {
                        self.malformed = true;
                    }
                }
                WireError::Malformed { .. } => self.malformed = true,
                WireError::Unsupported { .. } => {}
            }
            self.problem = Some(Problem::Wire(err));
        }
    }

    /// What the dissection itself says about the frame's cut: a mirror's verdicts, an ERF
    /// record's own wire length.
    #[inline]
    fn after_dissection(&mut self) {
        let FrameView {
            frame,
            dissected: Some(d),
            problem,
            truncated,
            malformed,
            ..
        } = self
        else {
            return;
        };
        if d.is_encapsulated() {
            erspan_verdicts(d, truncated, malformed, problem);
        }
        if let Some(erf) = d.erf() {
            // an ERF record says itself how long the packet was on the wire (the pcap
            // record's lengths count the ERF headers too)
            let have = frame
                .data
                .len()
                .saturating_sub(usize::from(d.link_header_len));
            *truncated = have < usize::from(erf.wlen());
        }
    }

    /// The packet's length on the wire: the record's, but for an ERF record, whose header is
    /// a pseudo-header (tshark's `frame.len` is its `wlen`).
    #[must_use]
    pub fn wire_len(&self) -> u32 {
        match self.dissected.as_ref().and_then(Dissected::erf) {
            Some(erf) => u32::from(erf.wlen()),
            None => self.frame.orig_len,
        }
    }

    /// Bytes of the packet captured (an ERF record's headers not counted).
    #[must_use]
    pub fn captured_len(&self) -> u32 {
        match self.dissected.as_ref().filter(|d| d.erf().is_some()) {
            Some(d) => self
                .frame
                .caplen
                .saturating_sub(u32::from(d.link_header_len)),
            None => self.frame.caplen,
        }
    }

    /// What the display filter may ask besides the field tree.
    #[must_use]
    pub fn facts(&self) -> FrameFacts {
        FrameFacts {
            number: self.frame.number,
            time_ns: self.frame.time_ns,
            len: u64::from(self.wire_len()),
            caplen: u64::from(self.captured_len()),
            truncated: self.truncated,
            malformed: self.malformed,
        }
    }
}

/// ERSPAN's own verdicts on a mirrored frame (interfaces.md §3): cut by the switch (the T bit),
/// or bad on the mirrored port (Type III's BSO). Out of line: most frames are not mirrored.
#[cold]
#[inline(never)]
fn erspan_verdicts(
    d: &Dissected<'_>,
    truncated: &mut bool,
    malformed: &mut bool,
    problem: &mut Option<Problem>,
) {
    for l in d.outer_layers().iter() {
        if l.kind != OuterKind::Erspan {
            continue;
        }
        let e = erspan::Header::new_unchecked(l.bytes);
        *truncated |= e.truncated();
        if e.is_type3() && e.en_bso() != 0 {
            *malformed = true;
            problem.get_or_insert(Problem::Wire(WireError::Malformed {
                layer: rocescope_dissectors::Layer::Erspan,
                offset: l.offset + 2,
                reason: rocescope_dissectors::error::Malformed::MirroredBad,
            }));
        }
    }
}
