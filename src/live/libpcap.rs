//! libpcap (cargo feature `libpcap`): the backend for RDMA devices (`-i mlx5_0`), whose
//! offloaded RoCE traffic only libpcap's RDMA sniffer sees, and for any interface with
//! `--backend libpcap`.
//!
//! The kernel filter is the same selection as [`super::filter`]'s program, written in
//! libpcap's filter language (libpcap compiles it; on an RDMA device it filters in user space).

use std::io;
use std::time::Duration;

use super::{LiveConfig, Receiver, RxBatch, no_such_interface};

use crate::frame::LinkType;

/// Frames taken in one `receive`, at most.
const FRAMES_PER_RECEIVE: usize = 4096;

pub(super) struct Libpcap {
    cap: pcap::Capture<pcap::Active>,
    link: LinkType,
}

/// The default selection (see [`super::filter`]) in libpcap's filter language.
#[must_use]
pub fn filter_expression(roce_ports: &[u16]) -> String {
    let mut ports = vec![4791u16];
    for &p in roce_ports.iter().chain(&[4789, 6081]) {
        if !ports.contains(&p) {
            ports.push(p);
        }
    }
    let ports: Vec<String> = ports.iter().map(|p| format!("udp dst port {p}")).collect();
    let options: Vec<String> = (0..=36)
        .map(|o| {
            format!(
                "(tcp[{}:2] & 0xff00 = 0xfe00 and tcp[{}:2] = 0xefab)",
                20 + o,
                22 + o
            )
        })
        .collect();
    let base = format!(
        "ether proto 0x8808 or ether proto 0x8915 or ether proto 0x8847 or ether proto 0x8848 or ip proto 47 or ip6 proto 47 or {} or (tcp and ({}))",
        ports.join(" or "),
        options.join(" or ")
    );
    format!("{base} or (vlan and ({base}))")
}

impl Libpcap {
    pub(super) fn open(cfg: &LiveConfig) -> anyhow::Result<Self> {
        let iface = cfg.iface.as_str();
        // (libpcap's own device list takes a good part of a second to make)
        if !super::interface_names().iter().any(|n| n == iface) {
            anyhow::bail!("{}", no_such_interface(iface));
        }
        let snaplen = i32::try_from(cfg.snaplen).unwrap_or(i32::MAX);
        let cap = pcap::Capture::from_device(iface)
            .and_then(|c| {
                c.promisc(true)
                    .snaplen(snaplen)
                    .immediate_mode(true)
                    .buffer_size(i32::try_from(cfg.buffer).unwrap_or(i32::MAX))
                    .precision(pcap::Precision::Nano)
                    .open()
            })
            .map_err(|e| pcap_error(iface, &e))?;
        let mut cap = cap
            .setnonblock()
            .map_err(|e| anyhow::anyhow!("{iface}: libpcap: {e}"))?;
        if !cfg.all {
            cap.filter(&filter_expression(&cfg.roce_ports), true)
                .map_err(|e| anyhow::anyhow!("{iface}: the capture filter: {e}"))?;
        }
        let link = LinkType(u32::try_from(cap.get_datalink().0).unwrap_or(u32::MAX));
        Ok(Libpcap { cap, link })
    }
}

fn pcap_error(iface: &str, e: &pcap::Error) -> anyhow::Error {
    let text = e.to_string();
    let lower = text.to_lowercase();
    if lower.contains("permission") || lower.contains("not permitted") {
        anyhow::anyhow!(
            "{iface}: capturing needs root or the CAP_NET_RAW capability (libpcap: {text})"
        )
    } else if lower.contains("no such device") || lower.contains("doesn't exist") {
        anyhow::anyhow!("{}", no_such_interface(iface))
    } else {
        anyhow::anyhow!("{iface}: libpcap: {text}")
    }
}

impl Receiver for Libpcap {
    fn receive(&mut self, batch: &mut RxBatch, timeout: Duration) -> io::Result<()> {
        use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
        use std::os::fd::AsFd;
        let ms = u16::try_from(timeout.as_millis()).unwrap_or(u16::MAX);
        let mut fds = [PollFd::new(self.cap.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::from(ms)) {
            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(io::Error::from(e)),
        }
        // non-blocking: everything that is there, then back
        while batch.len() < FRAMES_PER_RECEIVE {
            match self.cap.next_packet() {
                Ok(p) => {
                    let secs = u64::try_from(p.header.ts.tv_sec).unwrap_or(0);
                    // nanosecond precision: tv_usec holds nanoseconds
                    let nanos = u64::try_from(p.header.ts.tv_usec).unwrap_or(0);
                    batch.push(secs * 1_000_000_000 + nanos, p.header.len, &[p.data]);
                }
                Err(pcap::Error::TimeoutExpired) => break,
                Err(e) => return Err(io::Error::other(format!("libpcap: {e}"))),
            }
        }
        Ok(())
    }

    fn kernel_drops(&mut self) -> io::Result<u64> {
        let stats = self
            .cap
            .stats()
            .map_err(|e| io::Error::other(format!("libpcap: {e}")))?;
        // `if_dropped` is the interface's own drop counter (not the capture's): left out
        Ok(u64::from(stats.dropped))
    }

    fn link(&self) -> LinkType {
        self.link
    }
}
