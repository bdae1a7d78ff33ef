//! The transmit path of `rocescope send`: an `AF_PACKET` socket bound to one interface, with
//! `PACKET_QDISC_BYPASS`, that sends a batch of frames with one `sendmmsg`. The kernel copies
//! each frame into its own buffer and hands it to the driver before the call returns.
//!
//! This is the crate's one module with `unsafe` code: the socket calls (`socket`, `setsockopt`,
//! `bind`, `sendmmsg`), which neither `pnet_datalink` (a `sendto` per frame, through the queueing
//! discipline) nor `netring` offer. It replaces a memory-mapped TX ring (`PACKET_TX_RING`) that
//! sent fewer frames per second on the veth pair of `bench/send-vs-tcpreplay.sh` (1.23 M pps
//! against 1.6–1.8 M for `sendmmsg` of 64 frames): the ring's frames reach the kernel as pages
//! of the ring, which a veth's receive path copies again (`skb_copy_ubufs`), after the copy into
//! the ring; and the mapping itself needed `unsafe` that is gone.
//!
//! A device queue that is full (a real NIC sending slower than we hand frames over) refuses a
//! frame with `ENOBUFS`: [`TxSocket::send_batch`] reports how many frames went before it, and
//! the caller tries the rest again.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

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
        // SAFETY: a plain socket(2) call; the result is checked before use.
        let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(named("socket", io::Error::last_os_error()));
        }
        // SAFETY: `raw` is a socket descriptor just opened and owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let one: libc::c_int = 1;
        // SAFETY: `one` is a live c_int and the length passed is its size.
        let rc = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_QDISC_BYPASS,
                std::ptr::from_ref(&one).cast::<libc::c_void>(),
                to_u32(std::mem::size_of::<libc::c_int>()),
            )
        };
        if rc < 0 {
            return Err(named("PACKET_QDISC_BYPASS", io::Error::last_os_error()));
        }
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
                _ => return Err(named("sending", err)),
            }
        }
    }
}

fn named(what: &str, err: io::Error) -> io::Error {
    io::Error::new(err.kind(), format!("{what}: {err}"))
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}
