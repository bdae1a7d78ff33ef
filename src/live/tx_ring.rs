//! The transmit path of `rocescope send`: an `AF_PACKET` socket with a memory-mapped TX ring
//! (`PACKET_TX_RING`, TPACKET_V2) and `PACKET_QDISC_BYPASS`. Frames are copied into the ring's
//! slots and one `sendto` tells the kernel to send every slot marked ready: one system call for
//! a batch of frames, where a plain packet socket takes one `write` per frame.
//!
//! This is the crate's one module with `unsafe` code (issue 13 allows one, for a memory map that
//! measurably gains): the socket calls, the ring's `mmap` and the slot accesses. Measured on a
//! veth pair (`bench/send-vs-tcpreplay.sh`), it sends about twice the frames per second of a
//! `write` per frame. netring's `Injector` would do this without `unsafe` here, but it writes a
//! TPACKET_V1 header into a ring it set up as TPACKET_V3, so the kernel never sees a frame as
//! ready and nothing is sent (netring 0.29, Linux 6.x).
//!
//! Ring protocol (Documentation/networking/packet_mmap.rst): each slot starts with a
//! `tpacket2_hdr`; its `tp_status` word is the hand-over. User space fills a slot whose status
//! is `TP_STATUS_AVAILABLE` (frame bytes at [`DATA_OFFSET`], `tp_len`), then stores
//! `TP_STATUS_SEND_REQUEST`; the kernel sends it on the next `sendto` and stores
//! `TP_STATUS_AVAILABLE` again when the frame has left. A frame the device could not take stays
//! `TP_STATUS_SEND_REQUEST` and goes with the next `sendto`.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

// tp_status values of a TX slot (linux/if_packet.h)
const TP_STATUS_AVAILABLE: u32 = 0;
const TP_STATUS_SEND_REQUEST: u32 = 1;
const TP_STATUS_SENDING: u32 = 2;
const TP_STATUS_WRONG_FORMAT: u32 = 4;

/// `sizeof(struct tpacket2_hdr)` aligned to `TPACKET_ALIGNMENT` (16): where the kernel reads a
/// TX frame in its slot (`TPACKET2_HDRLEN - sizeof(struct sockaddr_ll)`).
const DATA_OFFSET: usize = 32;
/// Offset of `tp_len` in `struct tpacket2_hdr` (after the 32-bit `tp_status`).
const TP_LEN_OFFSET: usize = 4;
/// Bytes per block of the ring: page aligned, several slots each.
const BLOCK_SIZE: usize = 1 << 16;

/// A TX ring bound to one interface.
pub struct TxRing {
    fd: OwnedFd,
    base: NonNull<u8>,
    map_len: usize,
    slot_size: usize,
    slots_per_block: usize,
    slots: usize,
    /// The next slot to fill: slots are filled and sent in ring order.
    next: usize,
}

// SAFETY: the ring is owned by this value alone (the mapping and the socket are not shared), so
// moving it to another thread moves the only access to it.
unsafe impl Send for TxRing {}

impl TxRing {
    /// Opens a packet socket on `ifindex` with a TX ring of at least `slots` slots, each holding
    /// frames of up to `max_frame` bytes, bypassing the queueing discipline.
    ///
    /// # Errors
    /// The socket, one of its options, the mapping or the bind fails (the error names which).
    pub fn open(ifindex: u32, max_frame: usize, slots: usize) -> io::Result<TxRing> {
        let slot_size = (DATA_OFFSET + max_frame).next_multiple_of(16);
        if slot_size > BLOCK_SIZE || slots == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("TX ring slots of {slot_size} bytes"),
            ));
        }
        let slots_per_block = BLOCK_SIZE / slot_size;
        let blocks = slots.div_ceil(slots_per_block);
        let slots = blocks * slots_per_block;
        // protocol 0: the socket receives nothing (it only sends)
        // SAFETY: a plain socket(2) call; the result is checked before use.
        let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(named("socket", io::Error::last_os_error()));
        }
        // SAFETY: `raw` is a socket descriptor just opened and owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        set_option(
            &fd,
            libc::PACKET_VERSION,
            &(libc::tpacket_versions::TPACKET_V2 as libc::c_int),
            "PACKET_VERSION",
        )?;
        set_option(
            &fd,
            libc::PACKET_QDISC_BYPASS,
            &(1 as libc::c_int),
            "PACKET_QDISC_BYPASS",
        )?;
        let req = libc::tpacket_req {
            tp_block_size: to_u32(BLOCK_SIZE),
            tp_block_nr: to_u32(blocks),
            tp_frame_size: to_u32(slot_size),
            tp_frame_nr: to_u32(slots),
        };
        set_option(&fd, libc::PACKET_TX_RING, &req, "PACKET_TX_RING")?;
        let map_len = BLOCK_SIZE * blocks;
        // SAFETY: maps the ring the kernel just allocated for this socket, shared, at no fixed
        // address; the result is checked before use.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(named("mapping the TX ring", io::Error::last_os_error()));
        }
        let base =
            NonNull::new(base.cast::<u8>()).ok_or_else(|| io::Error::other("mmap gave null"))?;
        let ring = TxRing {
            fd,
            base,
            map_len,
            slot_size,
            slots_per_block,
            slots,
            next: 0,
        };
        // SAFETY: an all-zero sockaddr_ll is valid; the fields set are the documented ones.
        let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        addr.sll_family = libc::AF_PACKET as libc::c_ushort;
        addr.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
        addr.sll_ifindex = i32::try_from(ifindex).unwrap_or(i32::MAX);
        // SAFETY: `addr` is a sockaddr_ll and the length passed is its size.
        let rc = unsafe {
            libc::bind(
                ring.fd.as_raw_fd(),
                std::ptr::from_ref(&addr).cast::<libc::sockaddr>(),
                to_u32(std::mem::size_of::<libc::sockaddr_ll>()),
            )
        };
        if rc < 0 {
            return Err(named("bind", io::Error::last_os_error()));
        }
        Ok(ring)
    }

    /// Largest frame a slot holds.
    #[must_use]
    pub fn frame_capacity(&self) -> usize {
        self.slot_size - DATA_OFFSET
    }

    /// Start of slot `i` (< `self.slots`).
    fn slot(&self, i: usize) -> *mut u8 {
        let offset =
            (i / self.slots_per_block) * BLOCK_SIZE + (i % self.slots_per_block) * self.slot_size;
        // SAFETY: `offset + slot_size <= map_len` for every slot index below `self.slots`
        // (slots never cross a block, and there are `map_len / BLOCK_SIZE` blocks).
        unsafe { self.base.as_ptr().add(offset) }
    }

    /// The status word of slot `i`, shared with the kernel.
    fn status(&self, i: usize) -> &AtomicU32 {
        // SAFETY: `tp_status` is the first, 4-byte aligned u32 of the slot (slots are 16-byte
        // aligned in a page-aligned mapping), and the kernel only ever accesses it atomically
        // (smp_store_release/READ_ONCE), as this side does through AtomicU32.
        unsafe { &*self.slot(i).cast::<AtomicU32>() }
    }

    /// Puts `frame` in the next slot and marks it ready; `Ok(false)` when that slot has not
    /// been sent yet (the ring is full: [`TxRing::kick`] and try again).
    ///
    /// # Errors
    /// The frame is larger than a slot, or the kernel refused the slot's previous frame.
    pub fn push(&mut self, frame: &[u8]) -> io::Result<bool> {
        if frame.len() > self.frame_capacity() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "a frame of {} bytes does not fit the TX ring's {}-byte slots",
                    frame.len(),
                    self.frame_capacity()
                ),
            ));
        }
        let i = self.next;
        match self.status(i).load(Ordering::Acquire) {
            TP_STATUS_AVAILABLE => {}
            TP_STATUS_WRONG_FORMAT => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "the kernel refused a frame (TP_STATUS_WRONG_FORMAT)",
                ));
            }
            _ => return Ok(false),
        }
        let slot = self.slot(i);
        // SAFETY: the slot is AVAILABLE, so the kernel does not touch it until the status is
        // set below; `DATA_OFFSET + frame.len() <= slot_size` was checked above, and the frame
        // (our memory) cannot overlap the mapping.
        unsafe {
            std::ptr::copy_nonoverlapping(frame.as_ptr(), slot.add(DATA_OFFSET), frame.len());
            slot.add(TP_LEN_OFFSET)
                .cast::<u32>()
                .write(to_u32(frame.len()));
        }
        // Release: the frame and tp_len are visible before the kernel can see the request.
        self.status(i)
            .store(TP_STATUS_SEND_REQUEST, Ordering::Release);
        self.next = (i + 1) % self.slots;
        Ok(true)
    }

    /// Tells the kernel to send every ready slot; it returns when they have been handed to the
    /// device (those the device could not take yet stay ready for the next call).
    ///
    /// # Errors
    /// The send fails for another reason than a full device queue.
    pub fn kick(&mut self) -> io::Result<()> {
        loop {
            // SAFETY: the TX ring's conventional kick: no buffer, no address.
            let rc = unsafe {
                libc::sendto(
                    self.fd.as_raw_fd(),
                    std::ptr::null(),
                    0,
                    0,
                    std::ptr::null(),
                    0,
                )
            };
            if rc >= 0 {
                return Ok(());
            }
            let err = io::Error::last_os_error();
            match err.raw_os_error() {
                Some(libc::EINTR) => {}
                // a full device queue: the frames stay in the ring
                Some(libc::EAGAIN | libc::ENOBUFS) => return Ok(()),
                _ => return Err(named("sending", err)),
            }
        }
    }

    /// Whether every frame put in the ring has left it (none is waiting or being sent).
    #[must_use]
    pub fn drained(&self) -> bool {
        (0..self.slots).all(|i| {
            let s = self.status(i).load(Ordering::Acquire);
            s != TP_STATUS_SEND_REQUEST && s != TP_STATUS_SENDING
        })
    }
}

impl Drop for TxRing {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `open`; no reference into it outlives
        // `self` (the status references borrow `self`). The socket closes after (OwnedFd).
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.map_len);
        }
    }
}

fn set_option<T>(fd: &OwnedFd, option: libc::c_int, value: &T, name: &str) -> io::Result<()> {
    // SAFETY: `value` points to a live T and the length passed is its size.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_PACKET,
            option,
            std::ptr::from_ref(value).cast::<libc::c_void>(),
            to_u32(std::mem::size_of::<T>()),
        )
    };
    if rc < 0 {
        return Err(named(name, io::Error::last_os_error()));
    }
    Ok(())
}

fn named(what: &str, err: io::Error) -> io::Error {
    io::Error::new(err.kind(), format!("{what}: {err}"))
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}
