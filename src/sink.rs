//! Frame sinks: where generated or replayed frames go.
//!
//! [`PcapWriter`] (nanosecond pcap) and [`PcapNgWriter`] (one interface, `if_tsresol` = 9) write
//! their record headers and the frame bytes straight into a large buffer (or let the caller build
//! the frame in it: [`FrameSink::frame_buffer`]): no allocation per frame. [`MemorySink`] keeps frames in memory for tests. [`writer_for_path`] picks the format
//! from the file extension.

// Indexing cannot panic here: the output buffer is indexed at `len`, after `reserve` made room for
// what is written; `frame_buffer` hands out room it reserved.
#![allow(clippy::indexing_slicing)]

use std::io::{self, Write};
use std::path::Path;

use crate::capture::LinkType;
use crate::outfile::AtomicFile;

/// Write buffer size of the file writers.
const BUF_SIZE: usize = 1 << 18;

/// Default snapshot length: the largest frame a writer stores whole (as tcpdump's default).
pub const DEFAULT_SNAPLEN: u32 = 262_144;

const NS_PER_SEC: u64 = 1_000_000_000;

/// Frames a sender hands to [`FrameSink::send_all`] at once, at most: as many as the NIC's
/// sink sends with one system call.
pub const MAX_RUN: usize = 64;

// a larger run would take the live sink two calls
#[cfg(feature = "live")]
const _: () = assert!(MAX_RUN <= crate::live::tx_socket::MAX_BATCH);

/// Something that takes frames with timestamps: a capture file, a NIC, memory.
pub trait FrameSink {
    /// Takes one whole frame (`orig_len` = `frame.len()`), stamped `time_ns` (ns since the epoch).
    ///
    /// # Errors
    /// The underlying write fails.
    fn send(&mut self, time_ns: u64, frame: &[u8]) -> io::Result<()>;

    /// Takes a frame of which only `frame` was captured out of `orig_len` bytes on the wire.
    /// Sinks that cannot represent that (a NIC) send the bytes they have.
    ///
    /// # Errors
    /// The underlying write fails.
    fn send_truncated(&mut self, time_ns: u64, frame: &[u8], orig_len: u32) -> io::Result<()> {
        let _ = orig_len;
        self.send(time_ns, frame)
    }

    /// Flushes everything written so far. The sink may not be used afterwards.
    ///
    /// # Errors
    /// The final flush fails.
    fn finish(&mut self) -> io::Result<()>;

    /// Takes several whole frames, in order, as [`FrameSink::send`] each would (a NIC's sink
    /// sends them with one system call).
    ///
    /// # Errors
    /// The underlying write fails.
    fn send_all(&mut self, frames: &[(u64, &[u8])]) -> io::Result<()> {
        for &(time_ns, frame) in frames {
            self.send(time_ns, frame)?;
        }
        Ok(())
    }

    /// Room for building the next frame in place: at least `max_len` bytes (holding stale
    /// data: the builder writes every byte of its frame), or `None` when the sink cannot take
    /// frames that way (then use [`FrameSink::send`]). Nothing is written until
    /// [`FrameSink::commit_frame`]; asking again without committing discards the frame.
    ///
    /// # Errors
    /// Making room (flushing buffered frames) fails.
    fn frame_buffer(&mut self, max_len: usize) -> io::Result<Option<&mut [u8]>> {
        let _ = max_len;
        Ok(None)
    }

    /// Takes the frame built in the buffer of the last [`FrameSink::frame_buffer`]: its first
    /// `len` bytes, of `orig_len` on the wire (as [`FrameSink::send_truncated`] when larger).
    ///
    /// # Errors
    /// No buffer was handed out, `len` exceeds it, or the record cannot be written.
    fn commit_frame(&mut self, time_ns: u64, len: usize, orig_len: usize) -> io::Result<()> {
        let _ = (time_ns, len, orig_len);
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this sink takes no frames built in place",
        ))
    }
}

impl<S: FrameSink + ?Sized> FrameSink for Box<S> {
    fn send(&mut self, time_ns: u64, frame: &[u8]) -> io::Result<()> {
        (**self).send(time_ns, frame)
    }
    fn send_truncated(&mut self, time_ns: u64, frame: &[u8], orig_len: u32) -> io::Result<()> {
        (**self).send_truncated(time_ns, frame, orig_len)
    }
    fn finish(&mut self) -> io::Result<()> {
        (**self).finish()
    }
    fn send_all(&mut self, frames: &[(u64, &[u8])]) -> io::Result<()> {
        (**self).send_all(frames)
    }
    fn frame_buffer(&mut self, max_len: usize) -> io::Result<Option<&mut [u8]>> {
        (**self).frame_buffer(max_len)
    }
    fn commit_frame(&mut self, time_ns: u64, len: usize, orig_len: usize) -> io::Result<()> {
        (**self).commit_frame(time_ns, len, orig_len)
    }
}

/// The file writers' output buffer: records are written (or built) straight into it, and it
/// goes to the writer in large blocks. Flushed on drop, as a `BufWriter`.
struct OutBuf<W: Write> {
    inner: Option<W>,
    buf: Vec<u8>,
    /// Bytes of `buf` holding output.
    len: usize,
    /// Where the frame of the last `frame_buffer` starts, and its room.
    pending: Option<(usize, usize)>,
}

impl<W: Write> OutBuf<W> {
    fn new(inner: W) -> Self {
        OutBuf {
            inner: Some(inner),
            buf: vec![0; BUF_SIZE],
            len: 0,
            pending: None,
        }
    }

    fn inner_mut(&mut self) -> io::Result<&mut W> {
        self.inner
            .as_mut()
            .ok_or_else(|| io::Error::other("writer already taken"))
    }

    /// Writes the buffered bytes out.
    fn flush_buf(&mut self) -> io::Result<()> {
        if self.len > 0 {
            let len = std::mem::take(&mut self.len);
            let (inner, buf) = (self.inner.as_mut(), &self.buf[..len]);
            inner
                .ok_or_else(|| io::Error::other("writer already taken"))?
                .write_all(buf)?;
        }
        Ok(())
    }

    /// `n` bytes of room at `self.len`, flushing first if needed; `false` when `n` is more
    /// than the buffer can ever hold.
    fn reserve(&mut self, n: usize) -> io::Result<bool> {
        if self.buf.len() - self.len < n {
            self.flush_buf()?;
        }
        Ok(n <= self.buf.len())
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.pending = None;
        if self.reserve(bytes.len())? {
            self.buf[self.len..self.len + bytes.len()].copy_from_slice(bytes);
            self.len += bytes.len();
            Ok(())
        } else {
            self.inner_mut()?.write_all(bytes)
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.pending = None;
        self.flush_buf()?;
        self.inner_mut()?.flush()
    }

    /// `head` bytes of record header, then at least `max_len` of frame and `tail` more: hands
    /// out the frame's room.
    fn frame_buffer(&mut self, head: usize, max_len: usize, tail: usize) -> io::Result<&mut [u8]> {
        self.pending = None;
        let need = head + max_len + tail;
        if !self.reserve(need)? {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "frame buffer larger than the writer's buffer",
            ));
        }
        let at = self.len + head;
        self.pending = Some((self.len, max_len));
        Ok(&mut self.buf[at..at + max_len])
    }

    /// The record started by `frame_buffer`: its start and room.
    fn take_pending(&mut self, len: usize) -> io::Result<usize> {
        match self.pending.take() {
            Some((at, room)) if len <= room => Ok(at),
            Some(_) => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "frame longer than the buffer handed out",
            )),
            None => Err(io::Error::other("commit_frame without frame_buffer")),
        }
    }

    fn into_inner(mut self) -> io::Result<W> {
        self.flush_buf()?;
        self.inner
            .take()
            .ok_or_else(|| io::Error::other("writer already taken"))
    }
}

impl<W: Write> Drop for OutBuf<W> {
    fn drop(&mut self) {
        if self.inner.is_some() && !std::thread::panicking() {
            let _ = self.flush_buf(); // as BufWriter: errors on drop are ignored
        }
    }
}

fn frame_len(frame: &[u8]) -> io::Result<u32> {
    u32::try_from(frame.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "frame longer than 4 GiB"))
}

/// How many bytes of a frame a writer stores, and the original length it records.
fn cut(frame: &[u8], orig_len: u32, snaplen: u32) -> io::Result<(&[u8], u32)> {
    let len = frame_len(frame)?;
    let keep = len.min(snaplen);
    // The original length is never less than what is stored.
    Ok((&frame[..keep as usize], orig_len.max(len)))
}

/// Classic pcap, little-endian, nanosecond timestamps (magic `0xa1b23c4d`), version 2.4.
pub struct PcapWriter<W: Write> {
    out: OutBuf<W>,
    snaplen: u32,
    /// The second of the last record (`secs`, and `secs` × 10⁹): frames come in time
    /// order, so most records need no division.
    second: (u32, u64),
}

impl<W: Write> PcapWriter<W> {
    /// An Ethernet pcap with the default snaplen ([`DEFAULT_SNAPLEN`]); writes the file header.
    ///
    /// # Errors
    /// Writing the header fails.
    pub fn new(out: W) -> io::Result<Self> {
        Self::with_config(out, DEFAULT_SNAPLEN, LinkType::ETHERNET)
    }

    /// A pcap with the given snaplen (frames longer than it are cut and marked truncated) and
    /// link type; writes the file header. A snaplen of 0 means [`DEFAULT_SNAPLEN`].
    ///
    /// # Errors
    /// Writing the header fails.
    pub fn with_config(out: W, snaplen: u32, link: LinkType) -> io::Result<Self> {
        let snaplen = if snaplen == 0 {
            DEFAULT_SNAPLEN
        } else {
            snaplen
        };
        let mut out = OutBuf::new(out);
        let mut header = [0u8; 24];
        header[0..4].copy_from_slice(&0xA1B2_3C4Du32.to_le_bytes()); // magic, ns resolution
        header[4..6].copy_from_slice(&2u16.to_le_bytes()); // version major
        header[6..8].copy_from_slice(&4u16.to_le_bytes()); // version minor
        // 8..12 thiszone, 12..16 sigfigs: 0
        header[16..20].copy_from_slice(&snaplen.to_le_bytes()); // snaplen
        header[20..24].copy_from_slice(&link.0.to_le_bytes()); // network (link type)
        out.write_all(&header)?;
        Ok(PcapWriter {
            out,
            snaplen,
            second: (0, 0),
        })
    }

    /// Flushes and returns the underlying writer.
    ///
    /// # Errors
    /// The flush fails.
    pub fn into_inner(self) -> io::Result<W> {
        self.out.into_inner()
    }

    fn write_record(&mut self, time_ns: u64, frame: &[u8], orig_len: u32) -> io::Result<()> {
        let (data, orig_len) = cut(frame, orig_len, self.snaplen)?;
        let rec = pcap_record_header(time_ns, frame_len(data)?, orig_len)?;
        self.out.write_all(&rec)?;
        self.out.write_all(data)
    }
}

/// A pcap record header: timestamp, captured and original length.
fn pcap_record_header(time_ns: u64, caplen: u32, orig_len: u32) -> io::Result<[u8; 16]> {
    let secs = u32::try_from(time_ns / NS_PER_SEC).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "timestamp past 2106 does not fit a pcap record",
        )
    })?;
    // time_ns % 10^9 < 2^30.
    let nanos = u32::try_from(time_ns % NS_PER_SEC).unwrap_or(0);
    let mut rec = [0u8; 16];
    rec[0..4].copy_from_slice(&secs.to_le_bytes());
    rec[4..8].copy_from_slice(&nanos.to_le_bytes());
    rec[8..12].copy_from_slice(&caplen.to_le_bytes());
    rec[12..16].copy_from_slice(&orig_len.to_le_bytes());
    Ok(rec)
}

/// Stored and original length of a frame of `len` bytes built in place (as [`cut`]).
fn cut_len(len: usize, orig_len: usize, snaplen: u32) -> io::Result<(u32, u32)> {
    let too_long = || io::Error::new(io::ErrorKind::InvalidInput, "frame longer than 4 GiB");
    let len32 = u32::try_from(len).map_err(|_| too_long())?;
    let orig = u32::try_from(orig_len.max(len)).map_err(|_| too_long())?;
    Ok((len32.min(snaplen), orig))
}

impl<W: Write> FrameSink for PcapWriter<W> {
    fn send(&mut self, time_ns: u64, frame: &[u8]) -> io::Result<()> {
        self.write_record(time_ns, frame, 0)
    }
    fn send_truncated(&mut self, time_ns: u64, frame: &[u8], orig_len: u32) -> io::Result<()> {
        self.write_record(time_ns, frame, orig_len)
    }
    fn finish(&mut self) -> io::Result<()> {
        self.out.flush()
    }
    fn frame_buffer(&mut self, max_len: usize) -> io::Result<Option<&mut [u8]>> {
        self.out.frame_buffer(16, max_len, 0).map(Some)
    }
    fn commit_frame(&mut self, time_ns: u64, len: usize, orig_len: usize) -> io::Result<()> {
        let at = self.out.take_pending(len)?;
        let (caplen, orig) = cut_len(len, orig_len, self.snaplen)?;
        let (secs, start) = self.second;
        let rec = match time_ns.checked_sub(start) {
            Some(nanos) if nanos < NS_PER_SEC => {
                let mut rec = [0u8; 16];
                rec[0..4].copy_from_slice(&secs.to_le_bytes());
                // nanos < 10^9
                #[allow(clippy::cast_possible_truncation)]
                rec[4..8].copy_from_slice(&(nanos as u32).to_le_bytes());
                rec[8..12].copy_from_slice(&caplen.to_le_bytes());
                rec[12..16].copy_from_slice(&orig.to_le_bytes());
                rec
            }
            _ => {
                let rec = pcap_record_header(time_ns, caplen, orig)?;
                let secs = u32::from_le_bytes([rec[0], rec[1], rec[2], rec[3]]);
                self.second = (secs, u64::from(secs) * NS_PER_SEC);
                rec
            }
        };
        debug_assert_eq!(
            Ok(rec),
            pcap_record_header(time_ns, caplen, orig).map_err(|_| ())
        );
        self.out.buf[at..at + 16].copy_from_slice(&rec);
        self.out.len = at + 16 + caplen as usize;
        Ok(())
    }
}

/// pcapng, little-endian: one section header, one interface (`if_tsresol` = 9, nanoseconds) and
/// one Enhanced Packet Block per frame.
pub struct PcapNgWriter<W: Write> {
    out: OutBuf<W>,
    snaplen: u32,
}

impl<W: Write> PcapNgWriter<W> {
    /// An Ethernet pcapng with the default snaplen; writes the SHB and the IDB.
    ///
    /// # Errors
    /// Writing the header blocks fails.
    pub fn new(out: W) -> io::Result<Self> {
        Self::with_config(out, DEFAULT_SNAPLEN, LinkType::ETHERNET)
    }

    /// A pcapng with the given snaplen (0 means [`DEFAULT_SNAPLEN`]) and link type (which must
    /// fit in 16 bits, as the IDB field is 16 bits wide).
    ///
    /// # Errors
    /// Writing the header blocks fails, or the link type does not fit.
    pub fn with_config(out: W, snaplen: u32, link: LinkType) -> io::Result<Self> {
        Self::start(out, snaplen, link, None)
    }

    fn start(out: W, snaplen: u32, link: LinkType, name: Option<&str>) -> io::Result<Self> {
        let snaplen = if snaplen == 0 {
            DEFAULT_SNAPLEN
        } else {
            snaplen
        };
        let link16 = u16::try_from(link.0).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "pcapng link type must fit in 16 bits",
            )
        })?;
        let mut out = OutBuf::new(out);
        // Section Header Block: no options.
        let mut shb = [0u8; 28];
        shb[0..4].copy_from_slice(&0x0A0D_0D0Au32.to_le_bytes()); // block type
        shb[4..8].copy_from_slice(&28u32.to_le_bytes()); // block total length
        shb[8..12].copy_from_slice(&0x1A2B_3C4Du32.to_le_bytes()); // byte-order magic
        shb[12..14].copy_from_slice(&1u16.to_le_bytes()); // major version
        shb[14..16].copy_from_slice(&0u16.to_le_bytes()); // minor version
        shb[16..24].copy_from_slice(&(-1i64).to_le_bytes()); // section length: unknown
        shb[24..28].copy_from_slice(&28u32.to_le_bytes()); // block total length
        out.write_all(&shb)?;
        out.write_all(&interface_block(link16, snaplen, name))?;
        Ok(PcapNgWriter { out, snaplen })
    }

    /// Flushes and returns the underlying writer.
    ///
    /// # Errors
    /// The flush fails.
    pub fn into_inner(self) -> io::Result<W> {
        self.out.into_inner()
    }

    /// The writer the blocks go to (what was flushed to it so far).
    pub fn get_ref(&self) -> Option<&W> {
        self.out.inner.as_ref()
    }

    /// A pcapng of a live capture on interface `name` (written in its IDB's `if_name`).
    ///
    /// # Errors
    /// As [`PcapNgWriter::with_config`].
    pub fn for_interface(out: W, snaplen: u32, link: LinkType, name: &str) -> io::Result<Self> {
        Self::start(out, snaplen, link, Some(name))
    }

    /// An Interface Statistics Block: frames received and dropped by the capture (`isb_ifrecv`,
    /// `isb_ifdrop`) at `time_ns`, as tcpdump and dumpcap write at the end of a capture.
    ///
    /// # Errors
    /// The write fails.
    pub fn statistics(&mut self, time_ns: u64, received: u64, dropped: u64) -> io::Result<()> {
        let mut b = Vec::with_capacity(64);
        b.extend_from_slice(&5u32.to_le_bytes()); // block type: ISB
        b.extend_from_slice(&0u32.to_le_bytes()); // total length, set below
        b.extend_from_slice(&0u32.to_le_bytes()); // interface id
        let ts_hi = u32::try_from(time_ns >> 32).unwrap_or(u32::MAX);
        let ts_lo = u32::try_from(time_ns & 0xFFFF_FFFF).unwrap_or(0);
        b.extend_from_slice(&ts_hi.to_le_bytes());
        b.extend_from_slice(&ts_lo.to_le_bytes());
        for (code, value) in [(4u16, received), (5u16, dropped)] {
            b.extend_from_slice(&code.to_le_bytes());
            b.extend_from_slice(&8u16.to_le_bytes());
            b.extend_from_slice(&value.to_le_bytes());
        }
        b.extend_from_slice(&[0; 4]); // opt_endofopt
        let total = u32::try_from(b.len() + 4).unwrap_or(u32::MAX);
        b[4..8].copy_from_slice(&total.to_le_bytes());
        b.extend_from_slice(&total.to_le_bytes());
        self.out.write_all(&b)
    }

    fn write_block(&mut self, time_ns: u64, frame: &[u8], orig_len: u32) -> io::Result<()> {
        const PAD: [u8; 3] = [0; 3];
        let (data, orig_len) = cut(frame, orig_len, self.snaplen)?;
        let (head, pad, total) = epb_head(time_ns, frame_len(data)?, orig_len)?;
        self.out.write_all(&head)?;
        self.out.write_all(data)?;
        self.out.write_all(&PAD[..pad])?;
        self.out.write_all(&total.to_le_bytes())
    }
}

/// An Interface Description Block: `if_tsresol` = 9 (nanoseconds) and, for a live capture,
/// `if_name`.
fn interface_block(link: u16, snaplen: u32, name: Option<&str>) -> Vec<u8> {
    let mut b = Vec::with_capacity(64);
    b.extend_from_slice(&1u32.to_le_bytes()); // block type: IDB
    b.extend_from_slice(&0u32.to_le_bytes()); // total length, set below
    b.extend_from_slice(&link.to_le_bytes());
    b.extend_from_slice(&0u16.to_le_bytes()); // reserved
    b.extend_from_slice(&snaplen.to_le_bytes());
    if let Some(name) = name {
        // an option value is at most 65,535 bytes; an interface name is far shorter
        let name = name
            .as_bytes()
            .get(..name.len().min(255))
            .unwrap_or_default();
        b.extend_from_slice(&2u16.to_le_bytes()); // if_name
        b.extend_from_slice(&u16::try_from(name.len()).unwrap_or(0).to_le_bytes());
        b.extend_from_slice(name);
        b.resize(b.len() + (4 - name.len() % 4) % 4, 0);
    }
    b.extend_from_slice(&9u16.to_le_bytes()); // if_tsresol
    b.extend_from_slice(&1u16.to_le_bytes());
    b.extend_from_slice(&[9, 0, 0, 0]); // 10^-9 s, padding
    b.extend_from_slice(&[0; 4]); // opt_endofopt
    let total = u32::try_from(b.len() + 4).unwrap_or(u32::MAX);
    b[4..8].copy_from_slice(&total.to_le_bytes());
    b.extend_from_slice(&total.to_le_bytes());
    b
}

/// An Enhanced Packet Block's first 28 bytes, the padding after `caplen` bytes of frame,
/// and the block total length.
fn epb_head(time_ns: u64, caplen: u32, orig_len: u32) -> io::Result<([u8; 28], usize, u32)> {
    let pad = (4 - caplen as usize % 4) % 4;
    let total = u32::try_from(32 + caplen as usize + pad)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "frame too long for pcapng"))?;
    let mut head = [0u8; 28];
    head[0..4].copy_from_slice(&6u32.to_le_bytes()); // block type: EPB
    head[4..8].copy_from_slice(&total.to_le_bytes()); // block total length
    // 8..12 interface id: 0
    let ts_hi = u32::try_from(time_ns >> 32).unwrap_or(u32::MAX);
    let ts_lo = u32::try_from(time_ns & 0xFFFF_FFFF).unwrap_or(0);
    head[12..16].copy_from_slice(&ts_hi.to_le_bytes()); // timestamp (upper)
    head[16..20].copy_from_slice(&ts_lo.to_le_bytes()); // timestamp (lower)
    head[20..24].copy_from_slice(&caplen.to_le_bytes()); // captured packet length
    head[24..28].copy_from_slice(&orig_len.to_le_bytes()); // original packet length
    Ok((head, pad, total))
}

impl<W: Write> FrameSink for PcapNgWriter<W> {
    fn send(&mut self, time_ns: u64, frame: &[u8]) -> io::Result<()> {
        self.write_block(time_ns, frame, 0)
    }
    fn send_truncated(&mut self, time_ns: u64, frame: &[u8], orig_len: u32) -> io::Result<()> {
        self.write_block(time_ns, frame, orig_len)
    }
    fn finish(&mut self) -> io::Result<()> {
        self.out.flush()
    }
    fn frame_buffer(&mut self, max_len: usize) -> io::Result<Option<&mut [u8]>> {
        // head, frame, up to 3 bytes of padding, trailing block length
        self.out.frame_buffer(28, max_len, 3 + 4).map(Some)
    }
    fn commit_frame(&mut self, time_ns: u64, len: usize, orig_len: usize) -> io::Result<()> {
        let at = self.out.take_pending(len)?;
        let (caplen, orig) = cut_len(len, orig_len, self.snaplen)?;
        let (head, pad, total) = epb_head(time_ns, caplen, orig)?;
        let buf = &mut self.out.buf;
        buf[at..at + 28].copy_from_slice(&head);
        let end = at + 28 + caplen as usize;
        buf[end..end + pad].fill(0);
        buf[end + pad..end + pad + 4].copy_from_slice(&total.to_le_bytes());
        self.out.len = end + pad + 4;
        Ok(())
    }
}

/// Keeps every frame in memory: `(time_ns, bytes, orig_len)`. For tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemorySink {
    /// The frames received, in order.
    pub frames: Vec<(u64, Vec<u8>, u32)>,
    /// Whether `finish` was called.
    pub finished: bool,
}

impl MemorySink {
    /// An empty sink.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }
}

impl FrameSink for MemorySink {
    fn send(&mut self, time_ns: u64, frame: &[u8]) -> io::Result<()> {
        let len = frame_len(frame)?;
        self.frames.push((time_ns, frame.to_vec(), len));
        Ok(())
    }
    fn send_truncated(&mut self, time_ns: u64, frame: &[u8], orig_len: u32) -> io::Result<()> {
        let len = frame_len(frame)?;
        self.frames
            .push((time_ns, frame.to_vec(), orig_len.max(len)));
        Ok(())
    }
    fn finish(&mut self) -> io::Result<()> {
        self.finished = true;
        Ok(())
    }
}

/// Whether `path` asks for pcapng (extension `.pcapng`, any case).
#[must_use]
pub fn wants_pcapng(path: &Path) -> bool {
    path.extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("pcapng"))
}

/// Creates `path` and returns an Ethernet writer for it: pcapng when the extension is `.pcapng`,
/// nanosecond pcap otherwise. `-` writes pcap to standard output.
///
/// # Errors
/// The file cannot be created or the header cannot be written. The error does not name the
/// file: add it as context.
pub fn writer_for_path(path: &Path) -> io::Result<Box<dyn FrameSink>> {
    writer_for_path_with(path, DEFAULT_SNAPLEN)
}

/// As [`writer_for_path`], with a snaplen (0 means [`DEFAULT_SNAPLEN`]).
///
/// # Errors
/// As [`writer_for_path`].
pub fn writer_for_path_with(path: &Path, snaplen: u32) -> io::Result<Box<dyn FrameSink>> {
    writer_for_path_link(path, snaplen, LinkType::ETHERNET)
}

/// As [`writer_for_path_with`], for frames of link type `link`.
///
/// # Errors
/// As [`writer_for_path`].
pub fn writer_for_path_link(
    path: &Path,
    snaplen: u32,
    link: LinkType,
) -> io::Result<Box<dyn FrameSink>> {
    if path.as_os_str() == "-" {
        return Ok(Box::new(PcapWriter::with_config(
            io::stdout(),
            snaplen,
            link,
        )?));
    }
    let file = AtomicFile::create(path)?;
    Ok(if wants_pcapng(path) {
        Box::new(AtomicSink(PcapNgWriter::with_config(file, snaplen, link)?))
    } else {
        Box::new(AtomicSink(PcapWriter::with_config(file, snaplen, link)?))
    })
}

/// A file writer over an [`AtomicFile`]: [`FrameSink::finish`] flushes it and renames it to its
/// final name; dropped unfinished, nothing remains under that name.
struct AtomicSink<S>(S);

/// The file under a writer.
trait FileWriter: FrameSink {
    fn file(&mut self) -> io::Result<&mut AtomicFile>;
}

impl FileWriter for PcapWriter<AtomicFile> {
    fn file(&mut self) -> io::Result<&mut AtomicFile> {
        self.out.inner_mut()
    }
}

impl FileWriter for PcapNgWriter<AtomicFile> {
    fn file(&mut self) -> io::Result<&mut AtomicFile> {
        self.out.inner_mut()
    }
}

impl<S: FileWriter> FrameSink for AtomicSink<S> {
    fn send(&mut self, time_ns: u64, frame: &[u8]) -> io::Result<()> {
        self.0.send(time_ns, frame)
    }
    fn send_truncated(&mut self, time_ns: u64, frame: &[u8], orig_len: u32) -> io::Result<()> {
        self.0.send_truncated(time_ns, frame, orig_len)
    }
    fn finish(&mut self) -> io::Result<()> {
        self.0.finish()?;
        self.0.file()?.commit()
    }
    fn frame_buffer(&mut self, max_len: usize) -> io::Result<Option<&mut [u8]>> {
        self.0.frame_buffer(max_len)
    }
    fn commit_frame(&mut self, time_ns: u64, len: usize, orig_len: usize) -> io::Result<()> {
        self.0.commit_frame(time_ns, len, orig_len)
    }
}

/// How `send`'s frames reach the interface (`src/live/tx_socket.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TxPath {
    /// An `AF_XDP` socket where the kernel and the interface take one, else a packet socket.
    #[default]
    Auto,
    /// An `AF_XDP` socket in copy mode, or an error saying why not.
    Xdp,
    /// An `AF_PACKET` socket (`sendmmsg`, `PACKET_QDISC_BYPASS`).
    Packet,
}

/// Sends frames on a network interface ([`crate::live::tx_socket`]): through an `AF_XDP`
/// socket where one opens, else (or from the first frame longer than that socket sends) through
/// an `AF_PACKET` socket. [`FrameSink::send_all`] hands up to [`MAX_RUN`] frames to the kernel
/// in one system call, [`FrameSink::send`] one. Each returns when its frames are with the
/// device, so there is nothing to flush. Timestamps are ignored: pacing is the caller's
/// business. While the device's queue is full, the sender tries again.
#[cfg(feature = "live")]
pub struct LiveSink {
    /// `None` once every frame goes through `packet`.
    xdp: Option<crate::live::tx_socket::XdpSocket>,
    /// Longest frame `xdp` sends: what its frame area takes, and no more than the device's MTU
    /// allows (a longer frame goes through `packet`, which refuses what the device cannot
    /// send).
    xdp_max: usize,
    /// Opened when the first frame needs it.
    packet: Option<crate::live::tx_socket::TxSocket>,
    name: String,
    ifindex: u32,
    /// Why the `AF_XDP` socket was not used (`TxPath::Auto`), for the summary line.
    xdp_refused: Option<String>,
    /// A frame too long for `xdp` moved it and every later frame to `packet`.
    switched: bool,
    dropped: u64,
}

/// How long a send waits for the interface to take a frame from a full queue before it
/// gives up.
#[cfg(feature = "live")]
const STALL_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

#[cfg(feature = "live")]
impl LiveSink {
    /// Opens a transmit socket on the interface called `name`, as `path` says.
    ///
    /// # Errors
    /// No interface has that name (the message lists the ones there are), the process may not
    /// open raw sockets ("sending needs root or `CAP_NET_RAW`"), or the socket cannot be opened
    /// or bound. Every message names the interface and fits on one line.
    pub fn open(name: &str, path: TxPath) -> io::Result<Self> {
        use crate::live::tx_socket::{TxSocket, XdpSocket};
        let Some(iface) = pnet_datalink::interfaces()
            .into_iter()
            .find(|i| i.name == name)
        else {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                crate::live::no_such_interface(name),
            ));
        };
        // Said now, in one line: a device without carrier refuses every frame (the sender
        // would wait out STALL_LIMIT), where tcpreplay reports them sent and the kernel
        // counts them dropped.
        if !iface.is_up() {
            return Err(io::Error::new(
                io::ErrorKind::NotConnected,
                format!("{name} is down: nothing can be sent on it (ip link set {name} up)"),
            ));
        }
        if !iface.is_running() {
            return Err(io::Error::new(
                io::ErrorKind::NotConnected,
                format!("{name} has no carrier (its link is down): no frame would leave"),
            ));
        }
        let mut sink = LiveSink {
            xdp: None,
            xdp_max: 0,
            packet: None,
            name: name.to_owned(),
            ifindex: iface.index,
            xdp_refused: None,
            switched: false,
            dropped: 0,
        };
        match path {
            TxPath::Packet => {}
            TxPath::Xdp => {
                sink.xdp =
                    Some(XdpSocket::open(iface.index).map_err(|e| live_open_error(name, &e))?);
            }
            TxPath::Auto => match XdpSocket::open(iface.index) {
                Ok(xdp) => sink.xdp = Some(xdp),
                Err(e) => sink.xdp_refused = Some(e.to_string()),
            },
        }
        if let Some(xdp) = &sink.xdp {
            sink.xdp_max = xdp.max_frame().min(device_frame_max(name));
        }
        if sink.xdp.is_none() {
            sink.packet = Some(TxSocket::open(iface.index).map_err(|e| live_open_error(name, &e))?);
        }
        Ok(sink)
    }

    /// The way frames went out, for `send`'s summary.
    #[must_use]
    pub fn path(&self) -> &'static str {
        match (self.xdp.is_some(), self.switched) {
            (true, _) => "AF_XDP",
            (false, true) => "AF_XDP, then a packet socket from a frame it does not send",
            (false, false) => "packet socket",
        }
    }

    /// Why an `AF_XDP` socket was not used, when one was tried.
    #[must_use]
    pub fn xdp_refused(&self) -> Option<&str> {
        self.xdp_refused.as_deref()
    }

    /// Frames the device refused after the kernel took them: lost, not sent.
    #[must_use]
    pub fn dropped(&self) -> u64 {
        self.dropped + self.xdp.as_ref().map_or(0, |x| x.dropped())
    }

    /// Sends `frames` through the `AF_XDP` socket, all of them no longer than it sends, and
    /// returns when the kernel has taken every one.
    fn send_xdp(&mut self, mut rest: &[(u64, &[u8])]) -> io::Result<()> {
        let Some(xdp) = self.xdp.as_mut() else {
            return Ok(());
        };
        let mut stall = Stall::new(&self.name);
        while !rest.is_empty() || xdp.pending() > 0 {
            let queued = xdp.queue(rest.iter().map(|&(_, f)| f));
            rest = rest.get(queued..).unwrap_or_default();
            let (before, dropped) = (xdp.pending(), xdp.dropped());
            xdp.kick()?;
            // a device whose link went down drops what it is given (a veth whose peer is
            // down does): that ends the send, as a device that takes nothing does
            if xdp.dropped() > dropped {
                stall.carrier()?;
            }
            stall.check(queued > 0 || xdp.pending() < before)?;
        }
        Ok(())
    }

    /// Sends `frames` through the packet socket (opened now if it was not).
    fn send_packet(&mut self, mut rest: &[(u64, &[u8])]) -> io::Result<()> {
        if self.packet.is_none() {
            let socket = crate::live::tx_socket::TxSocket::open(self.ifindex)
                .map_err(|e| live_open_error(&self.name, &e))?;
            self.packet = Some(socket);
        }
        let Some(socket) = self.packet.as_ref() else {
            return Ok(());
        };
        let mut stall = Stall::new(&self.name);
        while !rest.is_empty() {
            let sent = socket
                .send_batch(rest.iter().map(|&(_, f)| f))
                .map_err(|e| too_long_for(&self.name, rest, e))?;
            rest = rest.get(sent..).unwrap_or_default();
            stall.check(sent > 0)?;
        }
        Ok(())
    }
}

/// `err` from sending `frames` (the first of which failed), said in the interface's terms
/// when the frame is longer than its MTU lets through: the kernel only says "Message too
/// long", and the usual cause is a scenario's PMTU above the link's.
#[cfg(feature = "live")]
fn too_long_for(name: &str, frames: &[(u64, &[u8])], err: io::Error) -> io::Error {
    let (Some(libc::EMSGSIZE), Some((_, frame))) = (err.raw_os_error(), frames.first()) else {
        return err;
    };
    let mtu = std::fs::read_to_string(format!("/sys/class/net/{name}/mtu"))
        .map_or_else(|_| "?".to_owned(), |t| t.trim().to_owned());
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{name} does not take a frame of {} bytes (its MTU is {mtu}): raise it (ip link set {name} mtu 9000) or lower the scenario's pmtu",
            frame.len()
        ),
    )
}

/// The longest frame `name`'s MTU lets through (its MTU plus an Ethernet header and one VLAN
/// tag, as the packet socket allows); no limit when the MTU cannot be read.
#[cfg(feature = "live")]
fn device_frame_max(name: &str) -> usize {
    std::fs::read_to_string(format!("/sys/class/net/{name}/mtu"))
        .ok()
        .and_then(|t| t.trim().parse::<usize>().ok())
        .map_or(usize::MAX, |mtu| mtu + 18)
}

/// Watches a send for a device that takes nothing for [`STALL_LIMIT`], or whose link goes
/// down while it sends.
#[cfg(feature = "live")]
struct Stall<'a> {
    name: &'a str,
    /// Set when the device first takes nothing: a full queue drains in microseconds.
    since: Option<std::time::Instant>,
    /// When the carrier was last read during this stall (its start, before the first read).
    looked: Option<std::time::Instant>,
}

/// How long a send stalls before it reads the interface's carrier, and again after that.
#[cfg(feature = "live")]
const CARRIER_EVERY: std::time::Duration = std::time::Duration::from_millis(50);

#[cfg(feature = "live")]
impl<'a> Stall<'a> {
    fn new(name: &'a str) -> Self {
        Stall {
            name,
            since: None,
            looked: None,
        }
    }

    /// After each try: `progress` says whether the device took anything. Yields the core
    /// while it does not; fails once the link is found down, or the stall has lasted
    /// [`STALL_LIMIT`] (a pause can hold a queue that long).
    fn check(&mut self, progress: bool) -> io::Result<()> {
        if progress {
            self.since = None;
            self.looked = None;
            return Ok(());
        }
        let since = *self.since.get_or_insert_with(std::time::Instant::now);
        // not at once: a NIC's full queue drains in microseconds, many times a second at
        // top speed, and a read of sysfs takes some
        if self.looked.get_or_insert(since).elapsed() >= CARRIER_EVERY {
            self.looked = Some(std::time::Instant::now());
            self.carrier()?;
        }
        if since.elapsed() >= STALL_LIMIT {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "the interface took no frame for {} s (its link went down, or a pause held it)",
                    STALL_LIMIT.as_secs()
                ),
            ));
        }
        std::thread::yield_now();
        Ok(())
    }

    /// Fails when the interface has lost its carrier (read from sysfs; a carrier that cannot
    /// be read counts as up).
    fn carrier(&self) -> io::Result<()> {
        let carrier = std::fs::read_to_string(format!("/sys/class/net/{}/carrier", self.name));
        if carrier.is_ok_and(|c| c.trim() == "0") {
            return Err(io::Error::new(
                io::ErrorKind::NotConnected,
                format!(
                    "{} lost its carrier while sending (its link went down): no frame would leave",
                    self.name
                ),
            ));
        }
        Ok(())
    }
}

/// One-line message for a failure to open the raw socket on `name`.
#[cfg(feature = "live")]
fn live_open_error(name: &str, err: &io::Error) -> io::Error {
    if err.kind() == io::ErrorKind::PermissionDenied {
        io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("sending needs root or CAP_NET_RAW (opening a raw socket on {name}: {err})"),
        )
    } else {
        io::Error::new(err.kind(), format!("opening a raw socket on {name}: {err}"))
    }
}

#[cfg(feature = "live")]
impl FrameSink for LiveSink {
    fn send(&mut self, time_ns: u64, frame: &[u8]) -> io::Result<()> {
        self.send_all(&[(time_ns, frame)])
    }
    fn send_all(&mut self, frames: &[(u64, &[u8])]) -> io::Result<()> {
        if self.xdp.is_some() {
            let fit = frames
                .iter()
                .position(|(_, f)| !(1..=self.xdp_max).contains(&f.len()))
                .unwrap_or(frames.len());
            let (short, rest) = frames.split_at(fit);
            self.send_xdp(short)?;
            if rest.is_empty() {
                return Ok(());
            }
            // From here on every frame goes through the packet socket, so that no frame
            // overtakes one sent before it on the other path (`send_xdp` returned when the
            // kernel had taken them all).
            self.dropped += self.xdp.take().map_or(0, |x| x.dropped());
            self.switched = true;
            return self.send_packet(rest);
        }
        self.send_packet(frames)
    }
    fn finish(&mut self) -> io::Result<()> {
        // every frame is with the device already: `send_all` returns when they are
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Frames of every length around the snaplen, some cut, enough to flush the buffer
    /// several times: building in place writes the same bytes as `send`.
    fn frames() -> Vec<(u64, Vec<u8>, usize)> {
        (0..2000u64)
            .map(|i| {
                let len = 60 + usize::try_from(i * 37 % 1500).unwrap();
                let bytes: Vec<u8> = (0..len).map(|k| (k as u64 ^ i) as u8).collect();
                let orig = if i % 7 == 0 { len + 100 } else { len };
                (1_700_000_000_000_000_000 + i * 333_333_333, bytes, orig)
            })
            .collect()
    }

    fn check<S: FrameSink, W>(mut by_send: S, mut in_place: S, done: impl Fn(S) -> W)
    where
        W: PartialEq + std::fmt::Debug,
    {
        for (t, bytes, orig) in frames() {
            if orig > bytes.len() {
                by_send
                    .send_truncated(t, &bytes, u32::try_from(orig).unwrap())
                    .unwrap();
            } else {
                by_send.send(t, &bytes).unwrap();
            }
            let buf = in_place.frame_buffer(4096).unwrap().unwrap();
            buf.fill(0xEE); // stale bytes must not leak
            buf[..bytes.len()].copy_from_slice(&bytes);
            in_place.commit_frame(t, bytes.len(), orig).unwrap();
        }
        by_send.finish().unwrap();
        in_place.finish().unwrap();
        assert_eq!(done(by_send), done(in_place));
    }

    #[test]
    fn pcap_in_place_equals_send() {
        for snaplen in [0, 100, 1000] {
            let new = || PcapWriter::with_config(Vec::new(), snaplen, LinkType::ETHERNET).unwrap();
            check(new(), new(), |w| w.into_inner().unwrap());
        }
    }

    #[test]
    fn pcapng_in_place_equals_send() {
        for snaplen in [0, 101, 1000] {
            let new =
                || PcapNgWriter::with_config(Vec::new(), snaplen, LinkType::ETHERNET).unwrap();
            check(new(), new(), |w| w.into_inner().unwrap());
        }
    }

    #[test]
    fn commit_needs_a_buffer() {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        assert!(w.commit_frame(0, 60, 60).is_err());
        let _ = w.frame_buffer(100).unwrap();
        assert!(w.commit_frame(0, 101, 101).is_err());
        assert!(MemorySink::new().frame_buffer(100).unwrap().is_none());
    }
}
