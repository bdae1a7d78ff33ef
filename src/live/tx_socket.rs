//! The transmit paths of `rocescope send`, and the crate's one module with `unsafe` code.
//!
//! - [`XdpSocket`], the default where the kernel offers it: an `AF_XDP` socket in copy mode,
//!   bound to queue 0 of one interface. Frames are copied into a frame area shared with the
//!   kernel (the UMEM), described in a ring, and one `sendto` has the kernel build and send as
//!   many as it allows; no message headers to copy in, no per-frame socket layer. On the veth
//!   pair of `bench/send-vs-tcpreplay.sh` it sent 1 KiB frames at 1.31x to 1.54x the rate of
//!   [`TxSocket`] (medians of 5 to 9 rounds in six runs; 1.03-1.08 M against 0.69-0.72 M pps in
//!   most), 2.02x to 2.21x that of `tcpreplay --topspeed --preload-pcap`. On a later day's
//!   machine, whose kernel sent faster for every tool, the same bench gave 1.93 M pps against
//!   1.35 M for [`TxSocket`] and 1.11 M for tcpreplay with its preload (1.74x, 9 rounds): the
//!   kernel's part shrank, ours did not. There, 15 % of the sending thread's samples were the
//!   copy into the frame area (`perf record -a`, 1,040,000 frames), while the generating
//!   thread waited for a free batch in almost half of its own. Generating the frames in the
//!   frame area itself, so that this thread only writes descriptors, would not be enough
//!   there: a build that skipped the copy altogether (its frames garbage, to bound the gain)
//!   sent 2.09 M pps against 1.83 M with it (1.14x, medians of 7 alternating rounds), about
//!   1.9x tcpreplay's. The rest is the kernel's copy-mode path and the veth's receive side,
//!   both on the sending core. On an AMD EPYC machine (0.78 M pps, 1.75x tcpreplay's 0.44 M
//!   with its preload, 5 rounds) the sending thread was busy all the time and the copy was
//!   6 % of its samples, the generating thread idle about half of its own (`perf record -a`,
//!   1,040,000 frames): the kernel's per-frame work is the bound there too. Sending from both
//!   cores, one socket on each of two TX queues, would not lift it for `send`'s own bench: two
//!   processes at once on a veth pair with two queues (one through `AF_XDP`, one through a
//!   packet socket) sent 0.80-0.96 M pps between them, where one alone sent 0.57-0.78 M, but
//!   the bench's frames are one RC queue pair's, whose PSNs must leave in order, and frames on
//!   two queues reach the wire in no set order.
//! - [`TxSocket`]: an `AF_PACKET` socket with `PACKET_QDISC_BYPASS` that sends a batch of
//!   frames with one `sendmmsg`; the kernel copies each frame into its own buffer and hands it
//!   to the driver before the call returns. It replaced a memory-mapped TX ring
//!   (`PACKET_TX_RING`) that sent fewer frames per second (1.23 M pps against 1.6–1.8 M for
//!   `sendmmsg` of 64 frames): the ring's frames reach the kernel as pages of the ring, which a
//!   veth's receive path copies again (`skb_copy_ubufs`).
//!
//! The `unsafe` is the system calls (`socket`, `setsockopt`, `getsockopt`, `bind`, `mmap`,
//! `sendmmsg`, `sendto`) and the accesses to the memory the kernel shares with us: the rings'
//! indices (atomics), their descriptors and the frame area. Neither `pnet_datalink` (a `sendto`
//! per frame, through the queueing discipline) nor `netring` offers these; the pure-Rust
//! `xdpilone` crate does the `AF_XDP` part, but under the EUPL-1.2, a copyleft licence this
//! MIT/Apache-2.0 crate does not take on.
//!
//! A device queue that is full (a real NIC sending slower than we hand frames over) refuses a
//! frame (`ENOBUFS`, or `EAGAIN` from the `AF_XDP` socket): the frame waits and the caller tries
//! again.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

/// Frames handed to the kernel in one `sendmmsg`, at most. The arrays it needs live on the
/// stack (5 KiB); more frames per call gained nothing measurable.
pub const MAX_BATCH: usize = 64;

/// A packet socket that sends on one interface.
#[derive(Debug)]
pub struct TxSocket {
    fd: OwnedFd,
}

impl TxSocket {
    /// Opens a packet socket bound to `ifindex` that bypasses the queueing discipline.
    ///
    /// # Errors
    /// The socket, its option or the bind fails (the error names which).
    pub fn open(ifindex: u32) -> io::Result<TxSocket> {
        // protocol 0: the socket receives nothing (it only sends)
        let fd = raw_socket(libc::AF_PACKET, "socket")?;
        let one: libc::c_int = 1;
        set_option(
            &fd,
            libc::SOL_PACKET,
            libc::PACKET_QDISC_BYPASS,
            &one,
            "PACKET_QDISC_BYPASS",
        )?;
        // SAFETY: an all-zero sockaddr_ll is valid; the fields set are the documented ones.
        let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        addr.sll_family = libc::AF_PACKET as libc::c_ushort;
        addr.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
        addr.sll_ifindex = i32::try_from(ifindex).unwrap_or(i32::MAX);
        // SAFETY: `addr` is a sockaddr_ll and the length passed is its size.
        let rc = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                std::ptr::from_ref(&addr).cast::<libc::sockaddr>(),
                to_u32(std::mem::size_of::<libc::sockaddr_ll>()),
            )
        };
        if rc < 0 {
            return Err(named("bind", io::Error::last_os_error()));
        }
        Ok(TxSocket { fd })
    }

    /// Sends the first frames of `frames` (up to [`MAX_BATCH`]), in order, with one system
    /// call, and returns how many the device took: fewer than given when its queue filled
    /// (none when it was full already); the caller sends the rest again.
    ///
    /// # Errors
    /// The send fails for another reason than a full device queue (the interface went down, a
    /// frame is larger than its MTU allows).
    pub fn send_batch<'a>(&self, frames: impl IntoIterator<Item = &'a [u8]>) -> io::Result<usize> {
        // SAFETY (both): all-zero iovec and mmsghdr are valid (null pointers, zero lengths)
        let mut iov: [libc::iovec; MAX_BATCH] = unsafe { std::mem::zeroed() };
        let mut msgs: [libc::mmsghdr; MAX_BATCH] = unsafe { std::mem::zeroed() };
        let mut n = 0;
        for ((frame, v), m) in frames.into_iter().zip(&mut iov).zip(&mut msgs) {
            // the kernel only reads through it (a send)
            v.iov_base = frame.as_ptr().cast_mut().cast::<libc::c_void>();
            v.iov_len = frame.len();
            m.msg_hdr.msg_iov = std::ptr::from_mut(v);
            m.msg_hdr.msg_iovlen = 1;
            n += 1;
        }
        if n == 0 {
            return Ok(0);
        }
        loop {
            // SAFETY: `msgs[..n]` each point to one iovec of `iov`, which points to a frame
            // borrowed for the whole call; no address (the socket is bound), no control data.
            let rc =
                unsafe { libc::sendmmsg(self.fd.as_raw_fd(), msgs.as_mut_ptr(), to_u32(n), 0) };
            if let Ok(sent) = usize::try_from(rc) {
                return Ok(sent);
            }
            let err = io::Error::last_os_error();
            match err.raw_os_error() {
                Some(libc::EINTR) => {}
                // a full device queue: nothing went this time
                Some(libc::EAGAIN | libc::ENOBUFS) => return Ok(0),
                // the first frame is longer than the device's MTU: as it is, for the
                // caller to say so in the device's terms
                Some(libc::EMSGSIZE) => return Err(err),
                _ => return Err(named("sending", err)),
            }
        }
    }
}

/// A chunk of [`XdpSocket`]'s frame area: a page, the largest chunk the kernel takes without
/// huge pages. RoCE frames of a 4096-byte PMTU are longer, and go in two chunks where the
/// kernel takes frames in pieces.
const XDP_FRAME_MAX: usize = 4096;
/// Chunks a frame may take where the kernel takes frames in pieces: the generator's frames
/// (4096 bytes of payload and their headers) fit in two.
const XDP_MAX_PIECES: usize = 2;
/// Chunks in the frame area (16 MiB): frames the kernel may hold at once.
const XDP_CHUNKS: usize = 4096;
/// Entries of the TX ring and the completion ring (a power of two).
const XDP_RING: u32 = 2048;
/// `XDP_MAX_TX_SKB_BUDGET` (linux/if_xdp.h, Linux 6.17): frames one `sendto` may send, 32
/// before. Older kernels refuse the option; they then send 32 a call.
const XDP_MAX_TX_SKB_BUDGET: libc::c_int = 9;

/// How long [`XdpSocket::open`] waits for a queue that another socket holds.
const BIND_BUSY_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// An `AF_XDP` socket in copy mode that only sends, on queue 0 of one interface.
///
/// [`queue`](Self::queue) copies frames into free chunks of the frame area and describes them
/// in the TX ring; [`kick`](Self::kick) has the kernel take what the ring holds (in copy mode it
/// builds a buffer for each frame, copies it and hands it to the driver within the call); the
/// completion ring gives the chunks back once the driver is done with them.
#[derive(Debug)]
pub struct XdpSocket {
    // declared first, so dropped first: the kernel lets go of the rings and the frame area
    // when the socket closes
    fd: OwnedFd,
    frames: Mapping,
    tx: Ring,
    completion: Ring,
    /// Chunk offsets in the frame area that the kernel does not hold.
    free: Vec<u64>,
    /// Index of the next TX descriptor we write (the kernel reads up to the producer index).
    tx_next: u32,
    /// Chunks one frame may take: 1, or [`XDP_MAX_PIECES`] where the kernel takes a frame in
    /// pieces (`XDP_USE_SG`).
    pieces: usize,
    /// Frames the kernel took and the device then refused (`EBUSY`): gone, not sent.
    dropped: u64,
}

impl XdpSocket {
    /// Opens an `AF_XDP` socket bound to queue 0 of `ifindex` in copy mode, with its frame
    /// area and rings mapped.
    ///
    /// # Errors
    /// The kernel has no `AF_XDP` sockets, the process may not open them or lock the frame
    /// area's memory, or the interface does not take the bind (the error names the step).
    pub fn open(ifindex: u32) -> io::Result<XdpSocket> {
        let fd = raw_socket(libc::AF_XDP, "AF_XDP socket")?;
        let frames = Mapping::new(
            XDP_CHUNKS * XDP_FRAME_MAX,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            None,
            0,
        )
        .map_err(|e| named("frame area", e))?;
        // SAFETY: an all-zero xdp_umem_reg is valid (no flags, no headroom, no metadata).
        let mut reg: libc::xdp_umem_reg = unsafe { std::mem::zeroed() };
        reg.addr = frames.ptr.as_ptr() as u64;
        reg.len = frames.len as u64;
        reg.chunk_size = to_u32(XDP_FRAME_MAX);
        set_option(&fd, libc::SOL_XDP, libc::XDP_UMEM_REG, &reg, "XDP_UMEM_REG")?;
        // the fill ring is for receiving, but the kernel wants one with the completion ring
        set_option(
            &fd,
            libc::SOL_XDP,
            libc::XDP_UMEM_FILL_RING,
            &XDP_RING,
            "XDP_UMEM_FILL_RING",
        )?;
        set_option(
            &fd,
            libc::SOL_XDP,
            libc::XDP_UMEM_COMPLETION_RING,
            &XDP_RING,
            "XDP_UMEM_COMPLETION_RING",
        )?;
        set_option(
            &fd,
            libc::SOL_XDP,
            libc::XDP_TX_RING,
            &XDP_RING,
            "XDP_TX_RING",
        )?;
        let budget = libc::c_int::try_from(XDP_RING).unwrap_or(libc::c_int::MAX);
        // older kernels: 32 frames a call, which only costs more calls
        let _ = set_option(
            &fd,
            libc::SOL_XDP,
            XDP_MAX_TX_SKB_BUDGET,
            &budget,
            "XDP_MAX_TX_SKB_BUDGET",
        );
        // SAFETY: an all-zero xdp_mmap_offsets is valid; the kernel fills it.
        let mut off: libc::xdp_mmap_offsets = unsafe { std::mem::zeroed() };
        let mut len = to_u32(std::mem::size_of::<libc::xdp_mmap_offsets>());
        // SAFETY: `off` is a live xdp_mmap_offsets and `len` holds its size.
        let rc = unsafe {
            libc::getsockopt(
                fd.as_raw_fd(),
                libc::SOL_XDP,
                libc::XDP_MMAP_OFFSETS,
                std::ptr::from_mut(&mut off).cast::<libc::c_void>(),
                &raw mut len,
            )
        };
        if rc < 0 {
            return Err(named("XDP_MMAP_OFFSETS", io::Error::last_os_error()));
        }
        if len as usize != std::mem::size_of::<libc::xdp_mmap_offsets>() {
            return Err(io::Error::other(
                "XDP_MMAP_OFFSETS: the kernel's ring layout is an older one",
            ));
        }
        let tx = Ring::map(
            &fd,
            &off.tx,
            std::mem::size_of::<libc::xdp_desc>(),
            libc::XDP_PGOFF_TX_RING,
        )
        .map_err(|e| named("TX ring", e))?;
        let completion = Ring::map(
            &fd,
            &off.cr,
            std::mem::size_of::<u64>(),
            libc::off_t::try_from(libc::XDP_UMEM_PGOFF_COMPLETION_RING).unwrap_or(0),
        )
        .map_err(|e| named("completion ring", e))?;
        // A frame longer than a chunk goes in several, where the kernel takes such frames
        // (Linux 6.6); an older one refuses the flag.
        let pieces = match bind_xdp(&fd, ifindex, libc::XDP_COPY | libc::XDP_USE_SG) {
            Ok(()) => XDP_MAX_PIECES,
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                bind_xdp(&fd, ifindex, libc::XDP_COPY)?;
                1
            }
            Err(e) => return Err(e),
        };
        let free = (0..XDP_CHUNKS as u64)
            .rev()
            .map(|i| i * XDP_FRAME_MAX as u64)
            .collect();
        let tx_next = tx.producer().load(Ordering::Relaxed);
        Ok(XdpSocket {
            fd,
            frames,
            tx,
            completion,
            free,
            tx_next,
            pieces,
            dropped: 0,
        })
    }

    /// The longest frame [`queue`](Self::queue) takes: a chunk, or several where the kernel
    /// takes a frame in pieces.
    #[must_use]
    pub fn max_frame(&self) -> usize {
        XDP_FRAME_MAX * self.pieces
    }

    /// Copies the first frames of `frames` into the frame area and describes them in the TX
    /// ring, as many as there is room for, and returns how many: each will be sent, in order,
    /// by the next [`kick`](Self::kick)s. Stops before an empty frame or one longer than
    /// [`max_frame`](Self::max_frame).
    pub fn queue<'a>(&mut self, frames: impl IntoIterator<Item = &'a [u8]>) -> usize {
        self.reap();
        let taken = self
            .tx_next
            .wrapping_sub(self.tx.consumer().load(Ordering::Acquire));
        let mut room = XDP_RING.saturating_sub(taken) as usize;
        let mut n = 0;
        for frame in frames {
            // a frame goes whole or not at all: the kernel sends what the producer index covers
            let pieces = frame.len().div_ceil(XDP_FRAME_MAX);
            if pieces == 0 || pieces > self.pieces || pieces > room || pieces > self.free.len() {
                break;
            }
            for (k, piece) in frame.chunks(XDP_FRAME_MAX).enumerate() {
                let Some(chunk) = self.free.pop() else { break };
                let at = usize::try_from(chunk).unwrap_or(usize::MAX);
                // SAFETY: `chunk` came from `free`: a chunk offset that `reap` checked to lie in
                // the frame area, with XDP_FRAME_MAX bytes after it, and that the kernel does
                // not hold (it gave it back, or never had it). `piece` is at most XDP_FRAME_MAX
                // long and is not in the frame area.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        piece.as_ptr(),
                        self.frames.ptr.as_ptr().add(at),
                        piece.len(),
                    );
                }
                let desc = libc::xdp_desc {
                    addr: chunk,
                    len: to_u32(piece.len()),
                    // every piece but the last says the frame goes on
                    options: if k + 1 < pieces {
                        libc::XDP_PKT_CONTD
                    } else {
                        0
                    },
                };
                // SAFETY: the slot is in the ring (`Ring::slot`), and ours to write: the kernel
                // reads slots only below the producer index, which is not yet past it.
                unsafe { self.tx.slot::<libc::xdp_desc>(self.tx_next).write(desc) };
                self.tx_next = self.tx_next.wrapping_add(1);
                room -= 1;
            }
            n += 1;
        }
        // the descriptors' writes are seen before the index that publishes them
        self.tx.producer().store(self.tx_next, Ordering::Release);
        n
    }

    /// Frames queued that the kernel has not taken yet.
    #[must_use]
    pub fn pending(&self) -> u32 {
        self.tx_next
            .wrapping_sub(self.tx.consumer().load(Ordering::Acquire))
    }

    /// Frames the device refused after the kernel took them: lost, not sent.
    #[must_use]
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Has the kernel send what the TX ring holds, as much as one call may; a full device queue
    /// or completion ring leaves the rest for the next call.
    ///
    /// # Errors
    /// The send fails for another reason (the interface went down).
    pub fn kick(&mut self) -> io::Result<()> {
        if self.pending() == 0 {
            return Ok(());
        }
        // SAFETY: a sendto(2) without data or address, which only wakes the socket's sending.
        let rc = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                std::ptr::null(),
                0,
                libc::MSG_DONTWAIT,
                std::ptr::null(),
                0,
            )
        };
        self.reap();
        if rc >= 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        match err.raw_os_error() {
            // the call's budget is spent, the device queue or the completion ring is full,
            // or the socket's send buffer is: the rest waits for the next call
            Some(libc::EINTR | libc::EAGAIN | libc::ENOBUFS) => Ok(()),
            // the device dropped the frame the kernel had taken (veth: its peer refused it)
            Some(libc::EBUSY) => {
                self.dropped += 1;
                Ok(())
            }
            _ => Err(named("sending", err)),
        }
    }

    /// Takes back the chunks the kernel is done with.
    fn reap(&mut self) {
        let end = self.completion.producer().load(Ordering::Acquire);
        let mut at = self.completion.consumer().load(Ordering::Relaxed);
        while at != end {
            // SAFETY: the slot is in the ring (`Ring::slot`), and below the producer index the
            // Acquire load read, so the kernel wrote it and will not until we move past it.
            let chunk = unsafe { self.completion.slot::<u64>(at).read() };
            // only offsets we handed out, whole chunks in the frame area, come back; anything
            // else is not taken (a chunk lost is better than a write out of bounds)
            if chunk.is_multiple_of(XDP_FRAME_MAX as u64)
                && chunk < self.frames.len as u64
                && self.free.len() < XDP_CHUNKS
            {
                self.free.push(chunk);
            }
            at = at.wrapping_add(1);
        }
        self.completion.consumer().store(at, Ordering::Release);
    }
}

/// One ring the kernel shares with the socket: a producer and a consumer index and a power of
/// two of descriptors of one type.
#[derive(Debug)]
struct Ring {
    map: Mapping,
    producer: usize,
    consumer: usize,
    desc: usize,
}

impl Ring {
    /// Maps the ring at `pgoff` of `fd`, checking that the offsets the kernel gave lie in it.
    fn map(
        fd: &OwnedFd,
        off: &libc::xdp_ring_offset,
        desc_size: usize,
        pgoff: libc::off_t,
    ) -> io::Result<Ring> {
        let at = |o: u64| usize::try_from(o).unwrap_or(usize::MAX);
        let (producer, consumer, desc) = (at(off.producer), at(off.consumer), at(off.desc));
        let len = desc.saturating_add(XDP_RING as usize * desc_size);
        let map = Mapping::new(len, libc::MAP_SHARED, Some(fd), pgoff)?;
        let index_ok = |o: usize| o.is_multiple_of(4) && o.saturating_add(4) <= len;
        if !index_ok(producer) || !index_ok(consumer) || !desc.is_multiple_of(desc_size.min(8)) {
            return Err(io::Error::other(
                "the kernel's ring offsets do not fit the ring",
            ));
        }
        Ok(Ring {
            map,
            producer,
            consumer,
            desc,
        })
    }

    fn producer(&self) -> &AtomicU32 {
        self.index(self.producer)
    }

    fn consumer(&self) -> &AtomicU32 {
        self.index(self.consumer)
    }

    fn index(&self, at: usize) -> &AtomicU32 {
        // SAFETY: `at` was checked in `map` to be 4-aligned with 4 bytes in the mapping, which
        // lives as long as `self`; the kernel accesses these words atomically too.
        unsafe { AtomicU32::from_ptr(self.map.ptr.as_ptr().add(at).cast::<u32>()) }
    }

    /// The descriptor slot of ring index `i` (taken modulo the ring's size).
    fn slot<T>(&self, i: u32) -> *mut T {
        let i = (i & (XDP_RING - 1)) as usize;
        // in the mapping: `map` made it `desc` + XDP_RING descriptors long
        self.map
            .ptr
            .as_ptr()
            .wrapping_add(self.desc + i * std::mem::size_of::<T>())
            .cast::<T>()
    }
}

/// Memory mapped with `mmap`, unmapped on drop.
#[derive(Debug)]
struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

impl Mapping {
    /// Maps `len` bytes, read and write, populated: of `fd` at `offset`, or anonymous.
    fn new(
        len: usize,
        flags: libc::c_int,
        fd: Option<&OwnedFd>,
        offset: libc::off_t,
    ) -> io::Result<Mapping> {
        let raw_fd = fd.map_or(-1, AsRawFd::as_raw_fd);
        // SAFETY: a fresh mapping at an address the kernel picks; nothing else refers to it.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags | libc::MAP_POPULATE,
                raw_fd,
                offset,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(named("mmap", io::Error::last_os_error()));
        }
        let ptr = NonNull::new(ptr.cast::<u8>())
            .ok_or_else(|| io::Error::other("mmap gave a null address"))?;
        Ok(Mapping { ptr, len })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping `new` made, unmapped once; nothing borrows it past its owner.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast::<libc::c_void>(), self.len);
        }
    }
}

// SAFETY: a Mapping is owned memory like a Box<[u8]>: whoever owns it may use it on any thread.
unsafe impl Send for Mapping {}

/// Binds an `AF_XDP` socket to queue 0 of `ifindex` with `flags`. A socket on the queue that
/// closed a moment ago (the previous `send`) still holds it until the kernel's deferred
/// clean-up runs: EBUSY, for some milliseconds, so that is tried again for a while.
fn bind_xdp(fd: &OwnedFd, ifindex: u32, flags: u16) -> io::Result<()> {
    // SAFETY: an all-zero sockaddr_xdp is valid; the fields set are the documented ones.
    let mut addr: libc::sockaddr_xdp = unsafe { std::mem::zeroed() };
    addr.sxdp_family = libc::AF_XDP as u16;
    addr.sxdp_flags = flags;
    addr.sxdp_ifindex = ifindex;
    addr.sxdp_queue_id = 0;
    let deadline = std::time::Instant::now() + BIND_BUSY_WAIT;
    loop {
        // SAFETY: `addr` is a sockaddr_xdp and the length passed is its size.
        let rc = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                std::ptr::from_ref(&addr).cast::<libc::sockaddr>(),
                to_u32(std::mem::size_of::<libc::sockaddr_xdp>()),
            )
        };
        if rc == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EBUSY) {
            return Err(named("AF_XDP bind", err));
        }
        if std::time::Instant::now() >= deadline {
            return Err(io::Error::new(
                io::ErrorKind::ResourceBusy,
                "AF_XDP bind: another AF_XDP socket holds the interface's queue 0 (another send on it?)",
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// A `SOCK_RAW` socket of `domain` (close-on-exec, protocol 0).
fn raw_socket(domain: libc::c_int, what: &str) -> io::Result<OwnedFd> {
    // SAFETY: a plain socket(2) call; the result is checked before use.
    let raw = unsafe { libc::socket(domain, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(named(what, io::Error::last_os_error()));
    }
    // SAFETY: `raw` is a socket descriptor just opened and owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// `setsockopt(fd, level, option, value)`.
fn set_option<T>(
    fd: &OwnedFd,
    level: libc::c_int,
    option: libc::c_int,
    value: &T,
    what: &str,
) -> io::Result<()> {
    // SAFETY: `value` is a live T and the length passed is its size.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            option,
            std::ptr::from_ref(value).cast::<libc::c_void>(),
            to_u32(std::mem::size_of::<T>()),
        )
    };
    if rc < 0 {
        return Err(named(what, io::Error::last_os_error()));
    }
    Ok(())
}

fn named(what: &str, err: io::Error) -> io::Error {
    io::Error::new(err.kind(), format!("{what}: {err}"))
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}
